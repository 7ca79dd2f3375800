"""What a model's tokens cost: the roster's own price, else litellm's bundled price map."""

from __future__ import annotations

from typing import Any

from pipeline.core.models.model_map import map_answer
from pipeline.core.models.roster import ModelsParams, RosterEntry

__all__ = ["price_per_token"]


def price_per_token(entry: RosterEntry, models: ModelsParams, *, batch: bool = False) -> tuple[float, float] | None:
    """USD per (input, output) token: the roster's own price, else litellm's map; None: unpriced.

    With `batch`, the price of the provider's batch API: the map's batch price where it has one,
    else the direct price times gateway.batch.discount."""
    if entry.is_bot or entry.provider == "local":
        return 0.0, 0.0
    discount = models.gateway.batch.discount if batch else 1.0
    own = models.gateway.prices.get(entry.model or "")
    if own is not None:
        return own.input_usd_per_mtok / 1e6 * discount, own.output_usd_per_mtok / 1e6 * discount
    info = map_answer("prices", entry.model or "", _map_prices(entry.model or ""))
    if info is None:
        return None
    pin, pout = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if pin is None or pout is None:
        return None
    batch_in, batch_out = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
    if batch and batch_in is not None and batch_out is not None:
        return float(batch_in), float(batch_out)
    return float(pin) * discount, float(pout) * discount


_PRICE_FIELDS = (
    "input_cost_per_token",
    "output_cost_per_token",
    "input_cost_per_token_batches",
    "output_cost_per_token_batches",
)


def _map_prices(model: str) -> Any:
    """What litellm's map says a token of `model` costs (None: a model it does not know); kept on
    disk per litellm version (`map_answer`), since every run plan prices the roster."""

    def ask(litellm: Any) -> dict[str, float | None] | None:
        try:
            info = litellm.get_model_info(model)
        except Exception:  # noqa: BLE001 - litellm raises for a model it does not know
            return None
        return {name: info.get(name) for name in _PRICE_FIELDS}

    return ask
