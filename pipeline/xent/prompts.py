"""What a model sees before each elicit, and how its move is read from the reply."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.xent.runtime import ElicitRequest

# Recorded in every play record; bumped whenever what a model is asked (or how its reply is read)
# changes. 2: the reference's move rule (last closed tag, <think> dropped) and its tag reminder;
# 3: one conversation per map; 4: reply protocols (`replies.protocol`): `reference` (the default)
# lets the model think before ending with its tagged move, with no stop sequence and no game reply
# cap; `short` is version 3's ask ("Reply with the move only", stop at </move>).
PROMPT_VERSION = 4

#: `replies.protocol`: how a model is asked for its move and how its reply is read
PROTOCOLS = ("reference", "short")

RULES = (
    "You are playing a cross-entropy game (a Xent game) written in XGL. A judge language model "
    "scores strings: xent(s | x) is how surprising the tokens of s are after the prefix x, in bits; "
    "xed(s | x) = xent(s) - xent(s | x) is how much x helps predict s; nex = -xent, dex = -xed. "
    "Your reward is the sum of the reward() lines given to your role; higher is better. "
    "`a // b` is a before the first b, `a % b` is a after the first b, `+` joins strings. "
    "ensure() lines reject moves that break a rule: you are asked again."
)


# The reference's rule (its default player): closed <think> blocks are dropped, the move is the
# last closed <move>...</move> (case-sensitive, not stripped), and a reply without one is the move
# as a whole (the runtime then cuts it to the elicit's token limit).
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_MOVE = re.compile(r"<move>(.*?)</move>", re.DOTALL)
MOVE_CLOSE = "</move>"
MISSING_TAG_REMINDER = "No move found: give your move between <move> and </move> tags."


def check_protocol(protocol: str) -> str:
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown reply protocol {protocol!r}: expected one of {', '.join(PROTOCOLS)}")
    return protocol


def reference_rule(max_tokens: int) -> str:
    """The `reference` protocol's rule for the reply (our wording of the reference's reply rules)."""
    return (
        f"Only the last closed <move>...</move> in your reply counts, and the move is limited to "
        f"{max_tokens} tokens of the judge's tokenizer (longer moves are cut)."
    )


def first_ask(request: ElicitRequest, protocol: str) -> list[str]:
    """The ask of a map's first prompt (and of every `per_ask` prompt), before any reminder."""
    if check_protocol(protocol) == "short":
        return [
            f"You play {request.role}. Give your move for register {request.register} "
            f"(at most {request.max_tokens} tokens; longer moves are cut)."
        ]
    return [f"You play {request.role}. Give your move for register {request.register}."]


def final_ask(request: ElicitRequest, protocol: str) -> str:
    """The last line of a first prompt: how to reply."""
    if check_protocol(protocol) == "short":
        return "Reply with the move only, inside tags: <move>your text</move>"
    return (
        "You may think it through first; then end your reply with your move inside tags: "
        "<move>your text</move>. " + reference_rule(request.max_tokens)
    )


def followup_ask(request: ElicitRequest, protocol: str, round_word: str) -> str:
    """The ask of a later turn of a map's conversation."""
    if check_protocol(protocol) == "short":
        return (
            f"{round_word}You play {request.role}. Give your move for register {request.register} "
            f"(at most {request.max_tokens} tokens) inside <move></move> tags."
        )
    return (
        f"{round_word}You play {request.role}. Give your move for register {request.register}: you may "
        f"think first, then end your reply with the move inside <move></move> tags. "
        + reference_rule(request.max_tokens)
    )


def drop_think(reply: str) -> str:
    """The reply without its closed <think> blocks (what the reference keeps in the conversation)."""
    return _THINK.sub("", reply)


def extract_move(reply: str, *, stopped_at_close: bool = False) -> tuple[str, bool]:
    """(move, tagged): the reference's move rule.

    `stopped_at_close`: the request used `</move>` as a stop sequence, which providers remove
    from the reply; the closing tag is put back after a final open `<move>` so that the rule
    sees the reply the model wrote.
    """
    text = _THINK.sub("", reply)
    if stopped_at_close and text.rfind("<move>") > text.rfind(MOVE_CLOSE):
        text += MOVE_CLOSE
    found = _MOVE.findall(text)
    if found:
        return found[-1], True
    return text, False


def parse_move(reply: str) -> str | None:
    """The tagged move of `reply`, or None when it has no closed <move> tag."""
    move, tagged = extract_move(reply)
    return move if tagged else None


def _block(title: str, lines: Sequence[str]) -> str:
    return f"## {title}\n" + ("\n".join(lines) if lines else "(none)")


#: per-token cells shown per reward when only recent rounds are detailed (an integer `detail_rounds`)
RECENT_TOKENS_SHOWN = 60


def history_lines(
    history: Sequence[Mapping[str, Any]], role_set: Sequence[str], detail_rounds: int | None
) -> list[str]:
    """Earlier rounds on this map: moves, reward totals, and per-token breakdowns.

    `detail_rounds` None (the published leaderboard's): every round with every token; an integer N
    (ours, shorter prompts): the last N rounds, at most RECENT_TOKENS_SHOWN tokens per reward.
    """
    lines: list[str] = []
    max_tokens_shown = None if detail_rounds is None else RECENT_TOKENS_SHOWN
    for k, past in enumerate(history):
        detailed = detail_rounds is None or k >= len(history) - detail_rounds
        total = past.get("total_bits")
        status = f"total {total:+.2f} bits" if total is not None else f"ended with an error: {past.get('error')}"
        lines.append(f"Round {past['round']}: {status}")
        for move in past["moves"]:
            if move["role"] in role_set:
                lines.append(f"  your move {move['register']} = {move['move']!r}")
        for reward in past["rewards"]:
            if reward["role"] not in role_set:
                continue
            lines.append(f"  reward {reward['expression']} to {reward['role']}: {reward['total_bits']:+.2f} bits")
            if detailed and reward.get("tokens"):
                shown = reward["tokens"] if max_tokens_shown is None else reward["tokens"][:max_tokens_shown]
                cells = " ".join(f"{tok!r}:{bits:+.1f}" for tok, bits in shown)
                more = (
                    f" ... (+{len(reward['tokens']) - len(shown)} tokens)" if len(reward["tokens"]) > len(shown) else ""
                )
                lines.append(f"    per token: {cells}{more}")
    return lines


def elicit_messages(
    code: str,
    description: str,
    request: ElicitRequest,
    history: Sequence[Mapping[str, Any]],
    role_set: Sequence[str],
    detail_rounds: int | None,
    reminder: bool = False,
    protocol: str = "reference",
) -> list[dict[str, str]]:
    """Chat messages for one elicit: rules, the game code, what the role sees, its history, the ask
    (worded by the reply `protocol`)."""
    visible = [f"{name} = {value!r}" for name, value in request.visible.items()]
    this_round = []
    for event in request.events:
        if event["type"] == "move" and event["role"] in role_set:
            this_round.append(f"your move {event['register']} = {event['move']!r}")
        elif event["type"] == "reward" and event["role"] in role_set:
            this_round.append(f"reward {event['expression']} to {event['role']}: {event['total_bits']:+.2f} bits")
    ask = first_ask(request, protocol)
    if request.failed:
        ask.append("Your last move broke the rule(s): " + "; ".join(request.failed) + ". Try a different move.")
    if reminder:
        ask.append(MISSING_TAG_REMINDER)
    ask.append(final_ask(request, protocol))
    user = "\n\n".join(
        [
            _block("Game", [description] if description else []),
            "## Code\n" + code.strip(),
            _block("What you can see", visible),
            _block("Your earlier rounds on this map", history_lines(history, role_set, detail_rounds)),
            _block("This round so far", this_round),
            "\n".join(ask),
        ]
    )
    return [{"role": "system", "content": RULES}, {"role": "user", "content": user}]


def followup_message(
    request: ElicitRequest,
    history: Sequence[Mapping[str, Any]],
    rounds_seen: int,
    role_set: Sequence[str],
    shown: Mapping[str, str],
    reminder: bool,
    protocol: str = "reference",
) -> dict[str, str]:
    """The next user turn of a map's one conversation: only what is new since the last ask.

    New rounds' results (the latest with its per-token breakdown), registers that changed, the
    conditions the last move broke, the tag reminder, then the ask (worded by the reply `protocol`).
    """
    parts: list[str] = []
    new_rounds = list(history[rounds_seen:])
    if new_rounds:
        lines = history_lines(new_rounds, role_set, detail_rounds=1)
        parts.append(_block("Result", lines))
    changed = [f"{name} = {value!r}" for name, value in request.visible.items() if shown.get(name) != value]
    if changed:
        parts.append(_block("What you can see now", changed))
    ask = []
    if request.failed:
        ask.append("Your last move broke the rule(s): " + "; ".join(request.failed) + ". Try a different move.")
    if reminder:
        ask.append(MISSING_TAG_REMINDER)
    round_word = f"Round {len(history) + 1}. " if new_rounds else ""
    ask.append(followup_ask(request, protocol, round_word))
    parts.append("\n".join(ask))
    return {"role": "user", "content": "\n\n".join(parts)}
