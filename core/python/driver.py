# The harnessd Python driver: runs cells sent by the daemon in one
# persistent namespace. Started as
#   python3 -c 'import sys;exec(compile(sys.argv[1],"<harnessd>","exec"))' DRIVER MODE
# with the cell's terminal (a PTY) as stdin, stdout and stderr, and the
# control socket as fd 3. Frames on fd 3 either way are a 4-byte
# big-endian length and that much JSON. The daemon sends
#   {"op": "run", "id": N, "token": "...", "code": "..."}   run a cell
#   {"op": "fence", "nonce": "..."}         write ESC ] 7779 ; nonce BEL to the terminal
# and the driver answers
#   {"ready": true, "ipython": bool, "version": "3.11.2"}   once, at start
#   {"id": N, "token": "...", "error": "ZeroDivisionError"} a cell is over ("" if it succeeded)
# What a cell prints goes to the terminal only; that a cell is over is
# said on fd 3 only, so no output can end or fake one. The fence, asked
# for after the daemon has the cell's end, marks where the cell's output
# ends in the terminal's stream (the kernel may deliver it late); its
# nonce is chosen then, when no code of the cell runs any more.
import builtins
import json
import linecache
import os
import signal
import struct
import sys
import traceback
import types

_CTL = 3
_ME = "<harnessd>"
_mode = sys.argv[2] if len(sys.argv) > 2 else "auto"
sys.argv = [""]
os.set_inheritable(_CTL, False)  # a cell's subprocesses never get it
_in_cell = False


def _on_sigint(signum, frame):
    # C-c or the daemon's interrupt: only a running cell is interrupted;
    # between cells the driver must not be.
    if _in_cell:
        raise KeyboardInterrupt


signal.signal(signal.SIGINT, _on_sigint)
# C-z would stop the interpreter, with no shell to continue it.
signal.signal(signal.SIGTSTP, signal.SIG_IGN)


def _read(n):
    b = b""
    while len(b) < n:
        c = os.read(_CTL, n - len(b))
        if not c:
            os._exit(0)  # the daemon is gone
        b += c
    return b


def _recv():
    (n,) = struct.unpack(">I", _read(4))
    return json.loads(_read(n))


def _send(m):
    b = json.dumps(m).encode()
    b = struct.pack(">I", len(b)) + b
    while b:
        b = b[os.write(_CTL, b):]


def _flush():
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass


# The cells' namespace is a module of its own, __main__ to them: the
# driver's names are not in it, and pickle finds the cells' classes.
_main = types.ModuleType("__main__")
_main.__dict__["__builtins__"] = builtins
sys.modules["__main__"] = _main

_shell = None
if _mode != "plain":
    try:
        from traitlets.config import Config
        from IPython.core.interactiveshell import InteractiveShell

        _c = Config()
        _c.HistoryManager.enabled = False
        _c.InteractiveShell.colors = "NoColor"
        _c.InteractiveShell.xmode = "Context"
        _shell = InteractiveShell.instance(config=_c, user_module=_main)
        # A value is shown as the plain REPL shows it, without Out[N]:.
        _shell.displayhook.write_output_prompt = lambda: None
    except Exception:
        _shell = None


def _strip(tb):
    # The driver's own frames lead every traceback of a cell: leave them out.
    while tb is not None and tb.tb_frame.f_code.co_filename == _ME:
        tb = tb.tb_next
    return tb


def _run_plain(code, n):
    import ast

    name = "<cell %d>" % n
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    try:
        tree = ast.parse(code, name, "exec")
    except (SyntaxError, ValueError) as e:
        traceback.print_exception(type(e), e, None)
        return type(e).__name__
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    try:
        exec(compile(tree, name, "exec"), _main.__dict__)
        if last is not None:
            v = eval(compile(last, name, "eval"), _main.__dict__)
            sys.displayhook(v)
    except BaseException as e:
        tb = _strip(e.__traceback__)
        traceback.print_exception(type(e), e, tb)
        return type(e).__name__
    return ""


def _run_ipython(code, n):
    r = _shell.run_cell(code, store_history=True)
    err = r.error_before_exec or r.error_in_exec
    return type(err).__name__ if err is not None else ""


def _run(code, n):
    global _in_cell
    _in_cell = True
    try:
        if _shell is not None:
            return _run_ipython(code, n)
        return _run_plain(code, n)
    except KeyboardInterrupt:
        # Between the cell's end and the flag's reset.
        return "KeyboardInterrupt"
    finally:
        _in_cell = False
        _flush()


_send({"ready": True, "ipython": _shell is not None, "version": sys.version.split()[0]})
while True:
    try:
        m = _recv()
        op = m.get("op")
        if op == "run":
            tok = m.pop("token", "")
            err = _run(m.pop("code", ""), int(m.get("id", 0)))
            _send({"id": m.get("id", 0), "token": tok, "error": err})
        elif op == "fence":
            os.write(1, b"\x1b]7779;" + m["nonce"].encode() + b"\x07")
    except KeyboardInterrupt:
        continue
