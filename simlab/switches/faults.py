"""The faults a switch twin can be given (``simlab fault leafN <kind>``), in
one place: the switch server makes them (server.inject_fault), simlab's fault
command takes them for a switch of any lab, twin or VM. No imports, so that
reading the list does not load the SSH server."""

KINDS = ("switch-pfc-off", "switch-mtu-low", "switch-rejects-command", "switch-ssh-drops-mid-push",
         "switch-watchdog-off", "switch-global-pfc-off")
LAYER = 7
