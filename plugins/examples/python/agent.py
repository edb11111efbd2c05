#!/usr/bin/python3
"""A harnessd agent plugin in Python: the recipe agent.

The task is a recipe: every line that starts with "$ " is a command. The
agent runs them in order, one per step, stops at the first that fails, and
finishes with what happened. It shows all a plugin needs: go-plugin's
handshake (magic cookie, protocol version, AutoMTLS), the Agent service
(Info, Step) from agent.proto, the health and controller services
go-plugin expects, reading the session's events, and exiting when harnessd
is gone.

Needs Debian's python3-grpcio, python3-protobuf and python3-cryptography.
agent_pb2.py and agent_pb2_grpc.py are generated from
plugins/proto/agent.proto by plugins/proto/gen.sh.
"""

import base64
import datetime
import json
import os
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

import agent_pb2
import agent_pb2_grpc

# The handshake harnessd expects (plugins/handshake.go).
MAGIC_COOKIE_KEY = "HARNESSD_AGENT_PLUGIN"
MAGIC_COOKIE_VALUE = "9c1f6e2a0b7d4e58a3f1c2d4e6b8a0f2"
PROTOCOL_VERSION = 1  # of agent.proto
CORE_PROTOCOL_VERSION = 1  # of go-plugin


def log(*args):
    print("recipe agent:", *args, file=sys.stderr, flush=True)


class RecipeAgent(agent_pb2_grpc.AgentServicer):
    def __init__(self):
        # A step gets the events since this process's last step; keep them.
        self.events = {}
        self.lock = threading.Lock()

    def Info(self, request, context):
        return agent_pb2.InfoResponse(name="recipe", version="1", actions=["cmd_run", "finish"])

    def Step(self, request, context):
        with self.lock:
            evs = self.events.setdefault(request.run, [])
            evs.extend(json.loads(raw) for raw in request.events)
            mine = own_events(evs, request.run)
        commands = [l[2:] for l in request.task.splitlines() if l.startswith("$ ")]
        runs = [e for e in mine if e["kind"] == "cmd_run" and e.get("source") == "agent"]
        outputs = {e.get("cause"): e for e in mine if e["kind"] == "cmd_output"}
        for r in runs:
            out = outputs.get(r["seq"])
            if out is not None and out.get("exit_code", 0) != 0:
                return finish("`%s` failed with exit code %d after %d of %d commands" % (
                    r["command"], out["exit_code"], len(runs), len(commands)))
        if len(runs) < len(commands):
            cmd = commands[len(runs)]
            log("step", request.step, "runs", repr(cmd))
            return agent_pb2.StepResponse(
                cmd_run=agent_pb2.CmdRun(command=cmd, timeout_s=60),
                thought="step %d of the recipe" % (len(runs) + 1),
                usage=agent_pb2.Usage(model="recipe"))
        return finish("all %d commands of the recipe succeeded" % len(commands))


def own_events(evs, run):
    """The events since this run's run_started."""
    start = 0
    for i, e in enumerate(evs):
        if e["kind"] == "run_started" and e.get("run") == run:
            start = i + 1
    return evs[start:]


def finish(message):
    return agent_pb2.StepResponse(finish=agent_pb2.Finish(message=message))


# go-plugin's own services, written by hand: the health check it uses for
# Ping, and the controller whose Shutdown it calls when it kills the
# plugin. Their messages are tiny, so they are encoded here directly.
SERVING = b"\x08\x01"  # grpc.health.v1.HealthCheckResponse{status: SERVING}


def plugin_services(stop):
    health = grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
        "Check": grpc.unary_unary_rpc_method_handler(
            lambda req, ctx: SERVING, request_deserializer=lambda b: b, response_serializer=lambda b: b),
    })
    controller = grpc.method_handlers_generic_handler("plugin.GRPCController", {
        "Shutdown": grpc.unary_unary_rpc_method_handler(
            lambda req, ctx: (stop.set(), b"")[1], request_deserializer=lambda b: b, response_serializer=lambda b: b),
    })
    return [health, controller]


def certificate():
    """A one-time self-signed certificate for AutoMTLS, as go-plugin makes."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=True,
                                         content_commitment=False, data_encipherment=False, key_agreement=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return key_pem, cert.public_bytes(serialization.Encoding.PEM), cert.public_bytes(serialization.Encoding.DER)


def watch_parent(stop):
    """Exit when harnessd is gone, even if it was killed with SIGKILL."""
    ppid = os.getppid()
    while not stop.wait(0.2):
        if os.getppid() != ppid:
            try:
                log("harnessd (pid %d) is gone; exiting" % ppid)
            except OSError:
                pass  # stderr went with harnessd
            os._exit(3)


def main():
    if os.environ.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        print("This is a harnessd agent plugin: harnessd runs it (see harness.toml's [agents]).", file=sys.stderr)
        return 1
    versions = os.environ.get("PLUGIN_PROTOCOL_VERSIONS", str(PROTOCOL_VERSION)).split(",")
    if str(PROTOCOL_VERSION) not in versions:
        print("harnessd speaks agent protocol %s; this plugin speaks %d" % (versions, PROTOCOL_VERSION), file=sys.stderr)
        return 1

    stop = threading.Event()
    threading.Thread(target=watch_parent, args=(stop,), daemon=True).start()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                         options=[("grpc.max_receive_message_length", 64 << 20)])
    agent_pb2_grpc.add_AgentServicer_to_server(RecipeAgent(), server)
    server.add_generic_rpc_handlers(plugin_services(stop))

    sock = os.path.join(tempfile.mkdtemp(prefix="harnessd-recipe-"), "plugin.sock")
    client_cert = os.environ.get("PLUGIN_CLIENT_CERT")
    server_cert = ""
    if client_cert:
        # AutoMTLS: only the harnessd that started us may connect, and it
        # trusts only the certificate we print.
        key_pem, cert_pem, cert_der = certificate()
        creds = grpc.ssl_server_credentials([(key_pem, cert_pem)], root_certificates=client_cert.encode(),
                                            require_client_auth=True)
        server.add_secure_port("unix:" + sock, creds)
        server_cert = base64.b64encode(cert_der).decode().rstrip("=")
    else:
        server.add_insecure_port("unix:" + sock)
    server.start()

    # The handshake: CORE-PROTOCOL|APP-PROTOCOL|NETWORK|ADDRESS|PROTOCOL|CERT
    print("%d|%d|unix|%s|grpc|%s" % (CORE_PROTOCOL_VERSION, PROTOCOL_VERSION, sock, server_cert), flush=True)
    log("serving on", sock)
    stop.wait()
    server.stop(grace=1).wait()
    try:
        os.unlink(sock)
        os.rmdir(os.path.dirname(sock))
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
