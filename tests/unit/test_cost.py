"""Cost per million output tokens, break-even utilisation, the published 66% claim, input validation."""

from __future__ import annotations

import pytest

from station.bench import cost
from station.errors import StationError
from tests.conftest import indexed_run


def test_rented_host_hand_computed() -> None:
    # 1,000 tok/s = 3.6 M tokens an hour; USD 3.60 an hour → USD 1.00 per M at full utilisation
    result = cost.compute(
        cost.scenario(output_tokens_per_s=1000, utilisation=1, api_price_per_mtok=2, gpu_hour_price=3.6)
    )
    assert result.self_hosted_per_mtok == pytest.approx(1.0)
    assert result.savings == pytest.approx(0.5)
    assert result.break_even_utilisation == pytest.approx(0.5)


def test_half_utilisation_doubles_the_cost_per_token() -> None:
    result = cost.compute(
        cost.scenario(output_tokens_per_s=1000, utilisation=0.5, api_price_per_mtok=2, gpu_hour_price=3.6)
    )
    assert result.self_hosted_per_mtok == pytest.approx(2.0)
    assert result.savings == pytest.approx(0.0)


def test_owned_host_capex_over_lifetime_plus_power() -> None:
    # USD 87,600 over 1 year = USD 10/h; 2 kW at USD 0.25 = USD 0.50/h
    scenario = cost.scenario(
        output_tokens_per_s=1000,
        utilisation=1,
        api_price_per_mtok=5,
        capex=87600,
        lifetime_years=1,
        power_kw=2,
        power_price_kwh=0.25,
    )
    result = cost.compute(scenario)
    assert result.hourly == pytest.approx(10.5)
    assert result.self_hosted_per_mtok == pytest.approx(10.5 / 3.6)


def test_api_cheaper_than_the_host_even_at_full_utilisation() -> None:
    result = cost.compute(
        cost.scenario(output_tokens_per_s=100, utilisation=1, api_price_per_mtok=1, gpu_hour_price=3.6)
    )
    assert result.savings < 0 and result.break_even_utilisation == pytest.approx(10.0)


def within(value: float, bounds: tuple[float, float]) -> bool:
    return bounds[0] <= value <= bounds[1]


def test_the_66_percent_needs_a_gpu_hour_price_that_blackwell_rentals_charged() -> None:
    """The claim's inputs derived, not chosen: at the published throughput, the hourly price that saves 66% of a
    documented API price is a documented Blackwell rental price."""
    tokens, api = cost.PUBLISHED_CLAIM["output_tokens_per_s"], cost.PUBLISHED_CLAIM["api_price_per_mtok"]
    needed = cost.gpu_hour_price_for(cost.PUBLISHED_SAVINGS, tokens, api)
    print(f"66% of USD {api}/M at {tokens:,.0f} tok/s needs USD {needed:.2f} per GPU-hour")
    assert within(api, cost.API_PRICES_PER_MTOK) and within(needed, cost.GPU_HOUR_PRICES)


def test_the_api_prices_the_66_percent_holds_against_overlap_those_charged() -> None:
    """Over the documented rental range, the API prices against which the GB300 saves 66%: some were charged."""
    tokens = cost.PUBLISHED_CLAIM["output_tokens_per_s"]
    cheapest, dearest = (cost.api_price_for(cost.PUBLISHED_SAVINGS, tokens, hour) for hour in cost.GPU_HOUR_PRICES)
    print(f"66% holds against API prices from USD {cheapest:.2f} to {dearest:.2f}/M")
    assert cheapest < cost.API_PRICES_PER_MTOK[1] and dearest > cost.API_PRICES_PER_MTOK[0]


def test_the_stated_inputs_give_the_published_saving_and_a_break_even_below_half() -> None:
    result = cost.compute(cost.scenario(**cost.PUBLISHED_CLAIM))
    assert result.savings == pytest.approx(cost.PUBLISHED_SAVINGS, abs=0.01)
    assert cost.PUBLISHED_CLAIM["gpu_hour_price"] == pytest.approx(
        cost.gpu_hour_price_for(result.savings, 11840.0, 0.42)
    )
    assert result.break_even_utilisation < 0.5  # "at low utilisation the API wins"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"utilisation": 0}, "utilisation: Input should be greater than 0"),
        ({"utilisation": 1.5}, "utilisation: Input should be less than or equal to 1"),
        ({"api_price_per_mtok": -1}, "api_price_per_mtok: Input should be greater than 0"),
        ({"gpu_hour_price": None, "capex": 1000}, "missing: lifetime_years, power_kw, power_price_kwh"),
        ({"capex": 1000}, "give gpu_hour_price or capex, not both"),
    ],
)
def test_bad_inputs_are_named(fields: dict, message: str) -> None:
    base = {"output_tokens_per_s": 1000, "utilisation": 1, "api_price_per_mtok": 1, "gpu_hour_price": 4}
    with pytest.raises(StationError, match="cost inputs are invalid") as error:
        cost.scenario(**(base | fields))
    assert message in error.value.problem


MEASURED = indexed_run(output_throughput=11840.0, avg_power_w=1200.0)
OWNED = {"capex": 100_000, "lifetime_years": 4, "power_price_kwh": 0.2, "api_price_per_mtok": 0.42, "utilisation": 1}


def test_a_run_is_priced_at_its_measured_throughput_and_power() -> None:
    priced = cost.of_run(MEASURED, **OWNED)
    assert priced.output_tokens_per_s == 11840.0 and priced.host.power_kw == pytest.approx(1.2)
    assert cost.of_run(MEASURED, **OWNED, power_kw=2.0).host.power_kw == 2.0  # the command line's wins


def test_a_rented_host_s_price_includes_its_power() -> None:
    rented = cost.of_run(MEASURED, gpu_hour_price=6, api_price_per_mtok=0.42, utilisation=1)
    assert rented.host.power_kw is None and rented.host.per_hour == 6


def test_a_run_that_is_no_measurement_is_no_cost_input() -> None:
    with pytest.raises(StationError, match="r1 is no cost input: it was not a valid measurement: 3 failed"):
        cost.of_run(MEASURED.model_copy(update={"failed": 3}), **OWNED)
