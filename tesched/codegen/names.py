"""Turn user-given names into unique, valid C identifiers.

Any character outside ``[A-Za-z0-9_]`` becomes ``_``; a leading digit, a C or GNU keyword, a name
reserved by the runtime (``ts_``) or a leading underscore (C reserves ``_[A-Z]...`` such as ``_Decimal64``
and file-scope ``_...``; cffi's generated code uses ``_cffi_...`` and ``_CFFI_...``) gets a prefix; a name already taken (including every identifier the
compiler's headers define, see :func:`tesched.builder.reserved_identifiers`) gets a numeric suffix. No
user text reaches the C source any other way.
"""
from __future__ import annotations

import re

C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int long
register restrict return short signed sizeof static struct switch typedef union unsigned void volatile
while _Bool _Complex _Imaginary int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t
main NULL INFINITY NAN abs exp expf log logf sqrt sqrtf tanh tanhf floor floorf ceil ceilf fabs fabsf
free malloc aligned_alloc memset memcpy
asm typeof typeof_unqual _Alignas _Alignof _Atomic _Generic _Noreturn _Static_assert _Thread_local
alignas alignof bool true false nullptr static_assert thread_local constexpr
""".split())


def sanitize(name: str) -> str:
    """A valid C identifier resembling ``name`` (not yet unique)."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name) or "v"
    ident = re.sub(r"_+", "_", ident)
    if ident[0].isdigit():
        ident = "v" + ident
    if ident.startswith("_"):
        ident = "u" + ident
    elif ident in C_KEYWORDS or ident.startswith(("ts_", "TS_")):
        ident = "u_" + ident
    return ident


class NameTable:
    """Hands out unique C identifiers, one per object."""

    def __init__(self, reserved: tuple[str, ...] = ()):
        self.taken: set[str] = set(reserved)
        self.by_key: dict[int, str] = {}

    def fresh(self, name: str) -> str:
        base = sanitize(name)
        ident, k = base, 1
        while ident in self.taken:
            k += 1
            ident = f"{base}_{k}"
        self.taken.add(ident)
        return ident

    def get(self, obj: object, name: str) -> str:
        key = id(obj)
        if key not in self.by_key:
            self.by_key[key] = self.fresh(name)
        return self.by_key[key]
