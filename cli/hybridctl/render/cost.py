"""cost's output: showback lines as versioned JSON, as CSV, or as a table with the total."""

from __future__ import annotations

import csv
import io
import json

from hybridctl.core.plan.model import Plan
from hybridctl.core.plan.summary import summarize
from hybridctl.core.pricing.showback import CostDimension, CostLine
from hybridctl.render.console import stdout
from hybridctl.render.plan import print_cost_table
from hybridctl.render.plan_summary import over_budget_text, usd
from hybridctl.render.untrusted import echo


def show_cost(by: CostDimension, plan: Plan, lines: list[CostLine], output_format: str) -> None:
    """`output_format`: table, csv or json. A plan over its budget says so (the table's total line, the JSON's
    over_budget); CSV is the lines alone."""
    total_usd_per_month = plan.total_usd_per_month
    if output_format == "json":
        echo(json.dumps({"format_version": 1, "by": by.value, "total_usd_per_month": total_usd_per_month,
                               "budget_usd_per_month": plan.budget_usd_per_month, "over_budget": plan.over_budget,
                               "lines": [{by.value: line.key, "gpus": line.gpus,
                                          "gpu_hours_per_month": line.gpu_hours_per_month,
                                          "compute_usd_per_month": line.compute_usd_per_month,
                                          "idle_pay_per_use_usd_per_month": line.idle_usd_per_month,
                                          "data_usd_per_month": line.data_usd_per_month,
                                          "total_usd_per_month": line.total_usd_per_month} for line in lines]},
                              indent=2))
    elif output_format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        # columns added at the end (gpu_hours_per_month, idle_pay_per_use_usd_per_month): a reader by position still reads
        writer.writerow([by.value, "gpus", "compute_usd_per_month", "data_usd_per_month", "total_usd_per_month",
                         "gpu_hours_per_month", "idle_pay_per_use_usd_per_month"])
        for line in lines:
            writer.writerow([line.key, line.gpus, f"{line.compute_usd_per_month:.2f}", f"{line.data_usd_per_month:.2f}",
                             f"{line.total_usd_per_month:.2f}", f"{line.gpu_hours_per_month:.2f}",
                             f"{line.idle_usd_per_month:.2f}"])
        echo(buffer.getvalue(), nl=False)
    else:
        console = stdout()
        print_cost_table(console, f"Monthly cost by {by.value.replace('_', ' ')}", lines, by.value)
        if plan.over_budget:
            console.print(f"total: ${total_usd_per_month:,.2f}/month, budget {usd(plan.budget_usd_per_month or 0.0)}"
                          f"/month: {over_budget_text(summarize(plan))}", style="red")
        else:
            console.print(f"total: ${total_usd_per_month:,.2f}/month")
