"""Real SSH test hosts on this machine: debootstrap root filesystems, overlays, network namespaces.

Import :class:`hosts.lab.HostLab` (no pytest dependency); the pytest fixture lives in tests/conftest.py.
"""
