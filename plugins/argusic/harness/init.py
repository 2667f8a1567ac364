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

It is also the harness's way out of the container that nothing inside can forge (the seal): the
child gets the write end of a pipe as descriptor SEAL_FD (7) and its standard output and error are
/dev/null, so this process alone writes to the container's standard output. The harness, itself
non-dumpable, closes that descriptor in everything it starts and writes one line to it at the end
(the digests of the files it wrote, and its report); when the child ends, this process copies that
line, at most SEAL_MAX_BYTES, to its standard output as `argusic-seal <line>`, where the host reads it
(the container's log) and checks the landed /out against it.

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
# seal.py's values (this file is mounted alone and imports nothing; tests/attempts/test_sealing.py
# checks that the two agree)
SEAL_FD = 7
SEAL_MAX_BYTES = 60 * 1024  # under a pipe's 64 KiB: the harness's one write never blocks
SEAL_PREFIX = b"argusic-seal "


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


def drain_seal(read_fd: int) -> bytes:
    """What the non-blocking seal pipe holds, at most SEAL_MAX_BYTES + 1 bytes (one more than a seal
    may have, so that an oversized one shows). The local executor reads its pipe with it too."""
    chunks, size = [], 0
    try:
        while size <= SEAL_MAX_BYTES and (chunk := os.read(read_fd, SEAL_MAX_BYTES + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    except BlockingIOError:  # a writer left alive: what it wrote so far is all there is
        pass
    return b"".join(chunks)


def _forward_seal(read_fd: int) -> None:
    """Copy the first line the harness sealed (if any) to the container's standard output."""
    held = drain_seal(read_fd)
    line = held.split(b"\n", 1)[0]
    if line and len(held) <= SEAL_MAX_BYTES:
        os.write(1, SEAL_PREFIX + line + b"\n")
    elif line:
        sys.stderr.write(f"init: seal over {SEAL_MAX_BYTES} bytes, not forwarded\n")


def _child(command: list[str], seal_write: int) -> None:
    """In the forked child: the seal pipe as SEAL_FD, standard output and error to /dev/null (only
    this process writes the container's output), then the command."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
    error_fd = os.dup(2)  # not inherited: where a failed exec is told
    try:
        os.dup2(seal_write, SEAL_FD)
        os.set_inheritable(SEAL_FD, True)  # the bootstrap hands it to the harness
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execvp(command[0], command)
    except OSError as err:
        os.write(error_fd, f"init: cannot run {command[0]}: {err.strerror}\n".encode())
        os._exit(127)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: init.py DEADLINE_EPOCH -- COMMAND [ARG...]\n")
        return 2
    deadline = time.monotonic() + (float(argv[1]) - time.time())
    command = argv[3:]
    _not_dumpable()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    seal_read, seal_write = os.pipe()
    os.set_blocking(seal_read, False)
    child = os.fork()
    if child == 0:
        os.close(seal_read)
        _child(command, seal_write)
    os.close(seal_write)
    while True:
        while True:  # reap everything that has ended: the command and any orphan
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = 0
            if pid == 0:
                break
            if pid == child:
                _forward_seal(seal_read)
                return _status(wait_status)  # the kernel kills what is left of the namespace
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            sys.stderr.write("init: deadline reached, ending the container\n")
            return DEADLINE_STATUS
        signal.sigtimedwait({signal.SIGCHLD}, min(remaining, 60.0))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
