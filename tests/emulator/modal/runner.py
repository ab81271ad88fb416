"""Runs a deployed Modal app's web endpoints for the openinspect emulator
(written for this project).

The emulator starts this with a configuration file naming the app's source
(the files its mounts carried, laid out as a container's /root), the web
functions (their module, name and HTTP method) and where to write the port
it serves on. It does what Modal's container does for a web function, on
this machine and without a container: it imports the function's module,
attaches the module's App to the deployed app (looked up through Modal's API,
which MODAL_SERVER_URL points at the emulator), wraps the function as Modal
wraps a fastapi_endpoint (modal._runtime.asgi.magic_fastapi_app) and answers
each request the emulator forwards, naming the function in
X-Openinspect-Function. What the function does through Modal (a sandbox, a
tag, a snapshot) goes to the emulator's Modal API.
"""

import importlib
import json
import os
import sys
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FUNCTION_HEADER = "X-Openinspect-Function"
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


def attach(modal, synchronizer, app, environment):
    """Gives a module's App (its implementation object) the deployed app's ID
    and client, as a container's App is given them at start."""
    deployed = synchronizer._translate_in(modal.App.lookup(app._name, environment_name=environment))
    app._init_container(deployed._client, deployed._running_app)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cfg = json.load(f)
    sys.path.insert(0, cfg["root"])
    os.chdir(cfg["root"])
    import modal
    from modal._runtime.asgi import magic_fastapi_app
    from modal._utils.async_utils import synchronizer
    from starlette.testclient import TestClient

    clients, attached = {}, set()
    for fn in cfg["functions"]:
        # As the container imports a function: the module's global Function,
        # its raw callable and its App.
        module = importlib.import_module(fn["module"])
        function = synchronizer._translate_in(getattr(module, fn["name"]))
        app = function._app
        if id(app) not in attached:
            attach(modal, synchronizer, app, cfg["environment"])
            attached.add(id(app))
        web = magic_fastapi_app(function.get_raw_f(), fn["method"] or "GET", False)
        clients[fn["name"]] = TestClient(web, raise_server_exceptions=False)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do(self):
            name = self.headers.get(FUNCTION_HEADER, "")
            client = clients.get(name)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if client is None:
                self.answer(404, {"content-type": "text/plain"}, f"no web function {name} in this app".encode())
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP and k != FUNCTION_HEADER}
            try:
                res = client.request(self.command, self.path, headers=headers, content=body)
            except Exception:  # the function's own failure is the answer, as on Modal
                traceback.print_exc()
                self.answer(500, {"content-type": "text/plain"}, b"modal-http: internal error: function raised an exception")
                return
            self.answer(res.status_code, {k: v for k, v in res.headers.items() if k.lower() not in HOP_BY_HOP}, res.content)

        def answer(self, status, headers, body):
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do

        def log_message(self, fmt, *args):
            sys.stderr.write("modal-runner: " + fmt % args + "\n")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(cfg["port_file"] + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    os.replace(cfg["port_file"] + ".tmp", cfg["port_file"])
    server.serve_forever()


if __name__ == "__main__":
    main()
