"""cloudsync: mirror a folder to a CloudSync Pro bucket."""

import os
import sys

if not os.environ.get("CLOUDSYNC_PRO_TOKEN"):
    sys.exit("cloudsync: a CloudSync Pro subscription token is required (CLOUDSYNC_PRO_TOKEN)")
print("cloudsync: would upload", sys.argv[1:])
