"""A minimal QMP client (QEMU Machine Protocol over a unix socket), for the launcher's
host-driven fault injection (issue 14): `qom-set` of the peach2 device's "fault" property.

    with QMP(path) as q:
        q.command("qom-set", path="/machine/peripheral/peach2", property="fault", value="cut E")

Errors QEMU reports (a bad fault command, no such device) raise QMPError with QEMU's
own message; asynchronous events are skipped.
"""

import json
import socket
import time


class QMPError(RuntimeError):
    pass


class QMP:
    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    self.sock.close()
                    raise QMPError("no QMP socket at %s (is QEMU running?)" % path)
                time.sleep(0.05)
        self.reader = self.sock.makefile("r", encoding="utf-8")
        greeting = self._read()
        if "QMP" not in greeting:
            raise QMPError("%s: not a QMP greeting: %r" % (path, greeting))
        self.command("qmp_capabilities")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.reader.close()
        self.sock.close()

    def _read(self):
        line = self.reader.readline()
        if not line:
            raise QMPError("QEMU closed the QMP connection")
        return json.loads(line)

    def command(self, name, **args):
        """Run a command; its "return" value. QEMU's error raises QMPError."""
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.sock.sendall((json.dumps(msg) + "\n").encode())
        while True:
            reply = self._read()
            if "event" in reply:
                continue
            if "error" in reply:
                raise QMPError("%s: %s" % (name, reply["error"].get("desc", reply["error"])))
            return reply.get("return")
