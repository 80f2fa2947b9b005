# Copies a bundle directory from the controller into the staging dir on the host: each file is
# transferred once, as it is, into the task's remote temporary dir, then one run of
# hybridctl_model_sync (phase=stage) moves them into place. ansible.builtin.copy of a directory
# costs a module run, a stat and two checksums per file and host, most of a sync's time.
from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        source = args.pop("src", None)
        if not source or not os.path.isdir(source):
            raise AnsibleActionFail(f"src must be a bundle directory on the controller, got {source!r}")
        if self._task.check_mode:
            result.update(changed=True, msg="would copy the bundle")
            return result
        files = []
        for parent, dirs, names in os.walk(source):
            dirs.sort()
            files += [os.path.relpath(os.path.join(parent, name), source) for name in sorted(names)]
        remote_tmp = self._connection._shell.tmpdir or self._make_tmp_path()
        uploads = {}
        for index, relative in enumerate(files):
            remote = self._connection._shell.join_path(remote_tmp, f"bundle-{index}")
            self._transfer_file(os.path.join(source, relative), remote)
            uploads[relative] = remote
        self._fixup_perms2(list(uploads.values()), execute=False)
        args.update(phase="stage", uploads=uploads)
        result.update(self._execute_module(module_name="hybridctl_model_sync", module_args=args,
                                           task_vars=task_vars))
        return result
