"""Sandboxes for generation: one interface (``base.Sandbox``), three backends (bwrap, docker,
local), named policies (``policy``), the workspace and its diff (``workspace``), and
``instance.open_instance_sandbox``, which puts one instance's view into a started sandbox."""
