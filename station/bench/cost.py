"""What a million output tokens cost self-hosted at a measured throughput, against an API price.

The hardware is paid for by the hour whether it works or not, so the cost per
token falls as utilisation rises; the API is paid per token. Break-even is the
utilisation at which both cost the same: below it the API wins.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from station.bench.records import IndexEntry
from station.errors import StationError

HOURS_PER_YEAR = 8760

Positive = Annotated[float, Field(gt=0)]


class HostCost(BaseModel):
    """The hourly cost of the host: a rental price, or capex spread over its life plus power."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu_hour_price: Positive | None = Field(None, description="USD per hour, e.g. a cloud rental")
    capex: Positive | None = Field(None, description="USD paid for the machine")
    lifetime_years: Positive | None = None
    power_kw: Annotated[float, Field(ge=0)] | None = Field(None, description="Average draw; measured when known")
    power_price_kwh: Annotated[float, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _one_way_to_price(self) -> HostCost:
        owned = {
            "capex": self.capex,
            "lifetime_years": self.lifetime_years,
            "power_kw": self.power_kw,
            "power_price_kwh": self.power_price_kwh,
        }
        missing = [name for name, value in owned.items() if value is None]
        if self.gpu_hour_price is None and missing:
            raise ValueError(f"give gpu_hour_price, or capex with lifetime and power (missing: {', '.join(missing)})")
        if self.gpu_hour_price is not None and self.capex is not None:
            raise ValueError("give gpu_hour_price or capex, not both")
        return self

    @property
    def per_hour(self) -> float:
        if self.gpu_hour_price is not None:
            return self.gpu_hour_price
        return self.capex / (self.lifetime_years * HOURS_PER_YEAR) + self.power_kw * self.power_price_kwh


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    output_tokens_per_s: Positive
    utilisation: Annotated[float, Field(gt=0, le=1, description="Share of the hours the host serves at that rate")]
    api_price_per_mtok: Positive
    host: HostCost


class Cost(BaseModel):
    hourly: float
    self_hosted_per_mtok: float
    api_per_mtok: float
    savings: float  # share of the API price saved; negative when the API is cheaper
    break_even_utilisation: float  # above 1: the API is cheaper even at full utilisation


def mtok_per_hour(output_tokens_per_s: float) -> float:
    """Millions of output tokens an hour at this rate."""
    return output_tokens_per_s * 3600 / 1e6


def compute(scenario: Scenario) -> Cost:
    full_mtok_per_hour = mtok_per_hour(scenario.output_tokens_per_s)
    hourly = scenario.host.per_hour
    self_hosted = hourly / (full_mtok_per_hour * scenario.utilisation)
    return Cost(
        hourly=hourly,
        self_hosted_per_mtok=self_hosted,
        api_per_mtok=scenario.api_price_per_mtok,
        savings=1 - self_hosted / scenario.api_price_per_mtok,
        break_even_utilisation=hourly / (full_mtok_per_hour * scenario.api_price_per_mtok),
    )


def scenario(**fields: object) -> Scenario:
    """A Scenario from flat fields, with field-level errors a user can act on."""
    host_fields = set(HostCost.model_fields)
    data = {k: v for k, v in fields.items() if k not in host_fields and v is not None}
    data["host"] = {k: v for k, v in fields.items() if k in host_fields and v is not None}
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg'].removeprefix('Value error, ')}" for e in exc.errors()
        )
        raise StationError(f"cost inputs are invalid: {problems}", "see `invoke --help cost`") from exc


def of_run(measured: IndexEntry | None, **given: object) -> Scenario:
    """A Scenario priced at a stored run's throughput (unless `output_tokens_per_s` is given) and, for an owned
    host, its measured GPU power (unless `power_kw` is); a run that is no valid measurement is no cost input."""
    if measured is not None:
        if measured.invalid:
            raise StationError(
                f"{measured.run_id} is no cost input: it was {measured.invalid}", "price a valid run, or --tokens-per-s"
            )
        given["output_tokens_per_s"] = given.get("output_tokens_per_s") or measured.output_throughput
        if given.get("power_kw") is None and measured.avg_power_w:
            given["power_kw"] = measured.avg_power_w / 1000
    if given.get("capex") is None:
        given["power_kw"] = None  # power is priced with an owned host only; a rental's price includes it
    return scenario(**given)


# The published claim: "about 66% cheaper than paying per API call at full
# utilisation", at 11,840 output tok/s on one GB300. Its inputs were not
# published; these are ours, stated so the figure can be checked and changed:
# a Blackwell Ultra GPU rents for about USD 6.00 an hour, and a hosted model of
# this class sells output tokens at about USD 0.42 per million.
PUBLISHED_CLAIM = {
    "output_tokens_per_s": 11840.0,
    "utilisation": 1.0,
    "api_price_per_mtok": 0.42,
    "gpu_hour_price": 6.00,
}
PUBLISHED_SAVINGS = 0.66

# What such prices were, publicly, in 2026 (USD; each figure's source and date in docs/evidence.md):
# one Blackwell data-center GPU (B200, B300, GB200) on demand, per hour, and a Nemotron Super-class model's
# output tokens on hosted APIs, per million.
GPU_HOUR_PRICES = (5.00, 10.50)
API_PRICES_PER_MTOK = (0.40, 1.50)


def gpu_hour_price_for(savings: float, output_tokens_per_s: float, api_price_per_mtok: float) -> float:
    """The hourly price at which a host serving at full utilisation is `savings` cheaper than the API."""
    return (1 - savings) * api_price_per_mtok * mtok_per_hour(output_tokens_per_s)


def api_price_for(savings: float, output_tokens_per_s: float, gpu_hour_price: float) -> float:
    """The API price per million output tokens against which such a host saves `savings`."""
    return gpu_hour_price / ((1 - savings) * mtok_per_hour(output_tokens_per_s))
