"""The model double in a container of its own, on a fresh internal Docker network (issue #28).

``DoubleContainer`` starts ``python3 model_double.py serve`` (``argusic.sandbox.model_double``, standard
library only) in the runner image, with the script, the key files and the prices staged read-only in
``/double``, on an *internal* bridge network made for it alone (nothing else reachable from it), bound
to its address there; ``stop`` reads its request log (header names, never a key), removes the
container, the network and the staged files, however the run ended. Two modes:

- a static key (``key``): the double accepts that one key on its model APIs (a judge's run,
  ``argusic.judging.double.DoubleBroker``);
- a gateway (``master_key``): the double is LiteLLM's gateway too, keys minted on ``/key/generate``
  with that master key, their spend priced from ``prices`` (the seed's ``model_prices.csv`` bytes by
  default) and their ``max_budget`` enforced (docs/keys.md, "The model double as the gateway"); the
  real ``LiteLLMKeyBroker`` mints the attempt's key against it (``argusic model-double attempt``).

The host reaches the double at its address on the internal network (the bridge's gateway is the
host); a container reaches it by joining ``network``.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from argusic.core.settings import runner_image
from argusic.sandbox import model_double
from argusic.sandbox.containment import locked_container_options

DOUBLE_PORT = 8080
START_SECONDS = 30
DOUBLE_LABEL = "argusic.model.double"


class DoubleNotStarted(RuntimeError):
    """The double did not answer (its last log lines, or "no answer")."""


class DoubleContainer:
    """One model double answering ``script`` (bytes of a valid script) in its container (see the
    module's docs). ``start`` returns its base URL (``http://<address>:<port>``); ``stop`` is safe to
    call at any time, more than once. Also a context manager (stopped on the way out)."""

    def __init__(
        self,
        script: bytes,
        *,
        key: str | None = None,
        master_key: str | None = None,
        prices: bytes | None = None,
        image: str | None = None,
        name_prefix: str = "argusic-model-double",
        label: str = DOUBLE_LABEL,
        port: int = DOUBLE_PORT,
    ) -> None:
        if not key and not master_key:
            raise ValueError("a model double needs a key to check (a static key or a gateway's master key)")
        self.script = script
        self.key, self.master_key = key, master_key
        if master_key and prices is None and model_double.DEFAULT_PRICES_FILE.is_file():
            prices = model_double.DEFAULT_PRICES_FILE.read_bytes()
        self.prices = prices
        self.image = image or runner_image()
        self.name_prefix, self.label, self.port = name_prefix, label, port
        self.network: str | None = None  # the network's name, also the container's
        self.requests: list[dict] = []  # the double's request log, read by stop
        self.stage: Path | None = None
        self._container: Any = None
        self._network: Any = None

    def __enter__(self) -> DoubleContainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> str:
        """Start the double; its base URL. DoubleNotStarted (or Docker's error) when it does not
        answer: what was made is removed before the error goes up."""
        import docker  # deferred: the Docker SDK loads only when a double runs

        try:
            return self._start(docker.from_env())
        except BaseException:
            self.stop()
            raise

    def _stage_files(self) -> list[str]:
        self.stage = Path(tempfile.mkdtemp(prefix="argusic-double-"))
        self.stage.chmod(0o755)
        shutil.copyfile(model_double.__file__, self.stage / "model_double.py")
        files = {"script.json": self.script}
        args = ["--script", "/double/script.json"]
        if self.key:
            files["key"] = self.key.encode()
            args += ["--key-file", "/double/key"]
        if self.master_key:
            files["master"] = self.master_key.encode()
            args += ["--master-key-file", "/double/master"]
            if self.prices is not None:
                files["model_prices.csv"] = self.prices
                args += ["--prices", "/double/model_prices.csv"]
        for name, data in files.items():
            (self.stage / name).write_bytes(data)
        for name in ("model_double.py", *files):
            (self.stage / name).chmod(0o644)  # the image's unprivileged user reads them
        return args

    def _start(self, client: Any) -> str:
        args = self._stage_files()
        name = f"{self.name_prefix}-{secrets.token_hex(6)}"
        self._network = client.networks.create(name, driver="bridge", internal=True, labels={self.label: "1"})
        self.network = self._network.name
        options = locked_container_options(
            tmpfs={"/tmp": "rw,noexec,nosuid,nodev,size=16m"},
            volumes={str(self.stage): {"bind": "/double", "mode": "ro"}},
            working_dir="/tmp",
            environment={"LANG": "C.UTF-8"},
            memory="256m",
            pids=64,
            cpus=0.5,
        )
        del options["network_disabled"], options["network_mode"]
        serve = (
            "exec python3 -I /double/model_double.py serve " + " ".join(args) + " --log /tmp/requests.jsonl"
            f' --port {self.port} --host "$(hostname -i)"'
        )
        self._container = client.containers.run(
            self.image,
            ["sh", "-c", serve],
            detach=True,
            name=name,
            network=self.network,
            labels={self.label: "1"},
            **options,
        )
        deadline = time.monotonic() + START_SECONDS
        while b"model double:" not in self._container.logs() and time.monotonic() < deadline:
            self._container.reload()
            if self._container.status == "exited":
                break
            time.sleep(0.2)
        self._container.reload()
        logs = self._container.logs()
        address = self._container.attrs["NetworkSettings"]["Networks"][self.network]["IPAddress"]
        if b"model double:" not in logs or b"model double: refused" in logs or not address:
            raise DoubleNotStarted(logs[-500:].decode(errors="replace").strip() or "no answer")
        return f"http://{address}:{self.port}"

    def read_requests(self) -> list[dict]:
        """The double's request log so far (one dict per request; never a key)."""
        import docker  # deferred: the Docker SDK loads only when a double runs

        if self._container is None:
            return self.requests
        with contextlib.suppress(docker.errors.DockerException):
            log = self._container.exec_run(["cat", "/tmp/requests.jsonl"]).output.decode(errors="replace")
            self.requests = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
        return self.requests

    def stop(self) -> None:
        """Remove the double, its network and its staged files (its keys with them); the request log
        is read first (``requests``)."""
        import docker  # deferred: the Docker SDK loads only when a double runs

        if self._container is not None:
            self.read_requests()
            with contextlib.suppress(docker.errors.DockerException):
                self._container.remove(force=True)
            self._container = None
        if self._network is not None:
            with contextlib.suppress(docker.errors.DockerException):
                self._network.remove()
            self._network = None
        if self.stage is not None:
            shutil.rmtree(self.stage, ignore_errors=True)
            self.stage = None


__all__ = ["DOUBLE_LABEL", "DOUBLE_PORT", "DoubleContainer", "DoubleNotStarted"]
