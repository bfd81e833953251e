"""A python target module that raises while it is imported: the target cannot run at all."""

raise RuntimeError("this module is broken on import")
