import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import weather  # noqa: E402


class SummariseTest(unittest.TestCase):
    def test_summary(self):
        hourly = [{"temp_c": 1.0, "rain_mm": 0.6}, {"temp_c": 4.5, "rain_mm": 0.5}]
        summary = weather.summarise({"city": "Oslo", "hourly": hourly})
        self.assertEqual(summary["hours"], 2)
        self.assertEqual((summary["min_temp_c"], summary["max_temp_c"]), (1.0, 4.5))
        self.assertEqual(summary["rain_mm"], 1.1)
        self.assertTrue(summary["umbrella"])


if __name__ == "__main__":
    unittest.main()
