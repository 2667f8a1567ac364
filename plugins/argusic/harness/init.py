"""PID 1 of an attempt container: the watchdog that ends the container at its deadline, whatever
happened to the orchestrator outside.

    python3 -I -S init.py DEADLINE_EPOCH -- COMMAND [ARG...]

Runs COMMAND as its child, reaps every orphan the agent leaves behind, and exits with COMMAND's
status when it ends (128 + N when a signal N ended it). At DEADLINE_EPOCH (the attempt's budget plus
a short grace, on the host's clock, which the container shares) it exits with status 124; the kernel
then kills every other process of the container's PID namespace, and the container stops.

The agent runs as the same user, so this process protects itself the ways the kernel allows:

- it installs no signal handler: the kernel drops every signal that processes of its own namespace
  send to a namespace's init unless init handles it (SIGKILL and SIGSTOP included), so the agent
  cannot kill or stop it; SIGCHLD is blocked (not handled) and waited for with sigtimedwait;
- it makes itself non-dumpable (prctl PR_SET_DUMPABLE 0): its /proc entries become root's and
  ptrace by the same user is refused, so the agent cannot attach to it or rewrite its memory.

Standard library only (it runs on the image's python3); -I -S keep the environment and site
packages out of it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_DUMPABLE = 4
DEADLINE_STATUS = 124


def _not_dumpable() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        sys.stderr.write(f"init: prctl(PR_SET_DUMPABLE) failed: errno {ctypes.get_errno()}\n")


def _status(wait_status: int) -> int:
    if os.WIFEXITED(wait_status):
        return os.WEXITSTATUS(wait_status)
    if os.WIFSIGNALED(wait_status):
        return 128 + os.WTERMSIG(wait_status)
    return 1


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: init.py DEADLINE_EPOCH -- COMMAND [ARG...]\n")
        return 2
    deadline = time.monotonic() + (float(argv[1]) - time.time())
    command = argv[3:]
    _not_dumpable()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    child = os.fork()
    if child == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        try:
            os.execvp(command[0], command)
        except OSError as err:
            sys.stderr.write(f"init: cannot run {command[0]}: {err.strerror}\n")
            os._exit(127)
    while True:
        while True:  # reap everything that has ended: the command and any orphan
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = 0
            if pid == 0:
                break
            if pid == child:
                return _status(wait_status)  # the kernel kills what is left of the namespace
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            sys.stderr.write("init: deadline reached, ending the container\n")
            return DEADLINE_STATUS
        signal.sigtimedwait({signal.SIGCHLD}, min(remaining, 60.0))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
