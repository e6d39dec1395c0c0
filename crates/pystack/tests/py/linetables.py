# Prints, for every code object of a few standard-library modules, its first line, its
# line table (hex) and the line of each instruction range as the interpreter computes it
# (co_lines() from 3.10, dis.findlinestarts() before).
import dis
import json
import sys


def codes(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            yield from codes(c)


for name in ["threading", "json.decoder", "argparse", "dataclasses"]:
    mod = __import__(name, fromlist=["_"])
    src = open(mod.__file__).read()
    for co in codes(compile(src, mod.__file__, "exec")):
        if sys.version_info >= (3, 10):
            table = co.co_linetable
            ranges = [[s, e, l] for (s, e, l) in co.co_lines()]
        else:
            table = co.co_lnotab
            starts = list(dis.findlinestarts(co))
            ranges = []
            for i, (s, l) in enumerate(starts):
                e = starts[i + 1][0] if i + 1 < len(starts) else len(co.co_code)
                ranges.append([s, e, l])
        print(json.dumps({"first": co.co_firstlineno, "table": table.hex(), "ranges": ranges}))
