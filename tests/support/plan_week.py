"""The week the tests plan a scheduled inventory for. The core reads no clock (timed_plan.py plan_week refuses a
scheduled inventory without a week), so a test names its week; one named week keeps a timed plan's segments the
same whatever day the suite runs, which the calendar's week would not across a daylight-saving change."""

from __future__ import annotations

from hybridctl.core.placement.planner import PlanOptions
from hybridctl.core.week.segments import IsoWeek

PLAN_WEEK = IsoWeek(2026, 48)  # late November: Europe and the US on winter time
PLAN_WEEK_TEXT = str(PLAN_WEEK)  # "2026-W48", as `plan --week` and `drill --week` take it
AT_PLAN_WEEK = PlanOptions(week=PLAN_WEEK)  # PlanOptions' defaults, at PLAN_WEEK
