"""The help of `--week` (plan, drill, cost, synth): the week a plan is for. The option is parsed, with `--at`,
by operations/moments.py."""

WEEK_HELP = ("The ISO week the plan is for: schedule windows are read in UTC at it (daylight saving). "
             "Default: the current week.")
