"""Errnos are the kernel's (ERR-003): values checked against the uapi headers.

Independent reference: include/uapi/asm-generic/errno-base.h and errno.h (v6.17):
EINVAL 22, E2BIG 7, ENOMEM 12, EBUSY 16, ENODATA 61, EOPNOTSUPP 95, ENOSPC 28, ERANGE 34.
"""

from __future__ import annotations

import errno

import pytest

UAPI = {"EINVAL": 22, "E2BIG": 7, "ENOMEM": 12, "EBUSY": 16, "ENODATA": 61,
        "EOPNOTSUPP": 95, "ENOSPC": 28, "ERANGE": 34, "EFAULT": 14, "EEXIST": 17}


@pytest.mark.rule("ERR-003")
@pytest.mark.parametrize(("name", "value"), sorted(UAPI.items()))
def test_python_errno_matches_linux_uapi(name: str, value: int) -> None:
    assert getattr(errno, name) == value
