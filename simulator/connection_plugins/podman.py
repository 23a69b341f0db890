# GPL-3.0-or-later
"""The podman connection with pipelining: one `podman exec -i` per module instead of five commands.

containers.podman's connection (which this extends) runs `podman exec` without `-i`, so it cannot feed a module on
standard input and copies every module into the container first: a temporary directory, the copy, a chmod, the run
and the clean-up, five `podman exec` calls a task. With `-i` the module is piped to the container's Python, as over
SSH with pipelining. The simulated racks (Molecule scenarios, `make demo`) name it through `connection_plugins`;
everything else is containers.podman's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = """
    name: podman
    short_description: containers.podman's podman connection, with pipelining
    description:
      - Runs commands in an existing podman container like C(containers.podman.podman), and pipes modules to the
        container's Python through C(podman exec -i) when pipelining is on.
    options:
      remote_addr:
        description: The ID of the container.
        default: inventory_hostname
        vars:
          - name: ansible_host
          - name: inventory_hostname
          - name: ansible_podman_host
      remote_user:
        description: User to run commands as inside the container.
        ini:
          - section: defaults
            key: remote_user
        env:
          - name: ANSIBLE_REMOTE_USER
        vars:
          - name: ansible_user
      podman_extra_args:
        description: Extra arguments to pass to the podman command line.
        default: ''
        ini:
          - section: defaults
            key: podman_extra_args
        vars:
          - name: ansible_podman_extra_args
        env:
          - name: ANSIBLE_PODMAN_EXTRA_ARGS
      podman_executable:
        description: Executable for the podman command.
        default: podman
        vars:
          - name: ansible_podman_executable
        env:
          - name: ANSIBLE_PODMAN_EXECUTABLE
      pipelining:
        description: Pipe modules to the container's Python instead of copying them in.
        type: boolean
        default: true
        env:
          - name: ANSIBLE_PIPELINING
        ini:
          - section: defaults
            key: pipelining
        vars:
          - name: ansible_pipelining
"""

import shlex

from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.connection import ConnectionBase
from ansible_collections.containers.podman.plugins.connection.podman import Connection as PodmanConnection


class Connection(PodmanConnection):
    transport = 'podman'
    has_pipelining = True

    def exec_command(self, cmd, in_data=None, sudoable=False):
        if in_data is None:
            return super(Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        if not self._connected:
            self._connect()
        ConnectionBase.exec_command(self, cmd, in_data=in_data, sudoable=sudoable)
        exec_args = ['exec', '--interactive']
        if self.user:
            exec_args.extend(('--user', self.user))
        return self._podman(exec_args, shlex.split(to_native(cmd, errors='surrogate_or_strict')), in_data)
