"""What a model's tokens cost: the roster's own price, else litellm's bundled price map."""

from __future__ import annotations

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
    import litellm  # the bundled map (LITELLM_LOCAL_MODEL_COST_MAP=True, set by the package)

    try:
        info = litellm.get_model_info(entry.model or "")
    except Exception:  # noqa: BLE001 - litellm raises for a model it does not know
        return None
    pin, pout = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if pin is None or pout is None:
        return None
    batch_in, batch_out = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
    if batch and batch_in is not None and batch_out is not None:
        return float(batch_in), float(batch_out)
    return float(pin) * discount, float(pout) * discount
