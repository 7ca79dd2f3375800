"""How each reference game is explained to a player: our own words, one text per game.

The reference benchmark ships a presentation function per game (Python that renders the prompt).
We do not run or copy it: an imported game gets the text below as its description (the leading
`#` block of its program), which the play prompts show with the game's code.

Each text states the game's real goal and score, so it is tied to the code it describes: `RULES`
holds, per game, the lines of that code other than the story draws (`assign(...story()...)`). A
game whose code has other lines (a later version under the same name, a map set that carries only
built maps) gets the generic explanation instead, which sends the player to the code: a text that
no longer matches its game would misstate the goal. Games we have no text for get it too.
"""

from __future__ import annotations

PRESENTATIONS: dict[str, str] = {
    "Condense": (
        "Condense. You get a short text (the story, register s). Write a prefix of at most 10 tokens "
        "that makes the story as predictable as possible for the judge model. Words that also occur in "
        "the story are deleted from your prefix before it is used (remove_common_words), so describe the "
        "story without repeating its words. Score: xent(s) - xent(s | your prefix), in bits; higher is "
        "better. The per-token breakdown after each round shows which parts of the story your prefix "
        "helped or hurt. Your map score is your best round."
    ),
    "Alethiometer": (
        "Alethiometer. You get a story (register s) and a list of symbols (register s1). Choose up to 40 "
        "tokens of symbols, separated by single spaces and spelled exactly as listed (case matters; any "
        "other word makes the move invalid and you are asked again). The symbols are put into a fixed "
        "sentence about Lyra reading her alethiometer, and that sentence is the prefix of the story. "
        "Score: xent(s) - xent(s | sentence), in bits; higher is better. Your map score is your best round."
    ),
    "Contrast": (
        "Contrast. You get two stories (s1 and s2). Write a prefix of at most 10 tokens that makes the "
        "first story more predictable and the second less predictable for the judge. Words of either "
        "story are deleted from your prefix first. Score: xed(s1 | prefix) - xed(s2 | prefix), in bits; "
        "higher is better. Your map score is your best round."
    ),
    "Synthesize": (
        "Synthesize. You get three stories (s1, s2, s3). Write one prefix of at most 10 tokens that helps "
        "the judge predict all of them; words of the stories are deleted from it first. Score: the sum "
        "over the three stories of xent(story) - xent(story | prefix), in bits; higher is better. Your map "
        "score is your best round."
    ),
    "Horizon": (
        "Horizon. You get a start text (register s). Write two short texts of at most 5 tokens each, one "
        "after the other: x1, which must read as a likely continuation of the start text, then x2, which "
        "must read as a likely continuation of the start text followed by x1. 'Likely' has a bar: the "
        'start text must help the judge predict x1 at least as much as "After the rain" helps it predict '
        '" I eat food" (xed(x1 | s) >= xed(" I eat food" | "After the rain")), and s + x1 must help it '
        "predict x2 as much (xed(x2 | s + x1) >= the same bar). A text below the bar is refused and asked "
        "for again; the 11th refusal of the same line ends the round with no score. Only x2 is scored: "
        "dex(x2 | s) = xent(x2 | s) - xent(x2), the bits by which the start text alone makes x2 harder to "
        "predict. So take the text, one plausible step at a time, somewhere the start text would not lead. "
        "Higher is better. Your map score is your best round."
    ),
    "Two-Ways": (
        "Two-Ways. You get two stories, A (register s1) and C (register s2). Write one bridge text B of at "
        "most 10 tokens (register t) that joins them in both orders: A then B then C, and C then B then A. "
        'Each order is read after the fixed opening "I have a fun story to tell you:" (register s). '
        "Score, in bits: [xent(C | s + A) - xent(C | s + A + B)] + [xent(A | s + C) - xent(A | s + C + B)], "
        "the four reward lines together: how much your bridge, placed after one story, helps the judge "
        "predict the other, summed over both directions. It is negative when the bridge hurts. Higher is "
        "better. Your map score is your best round."
    ),
}

#: The code each text describes: the game's lines without comments, blanks and story() draws.
RULES: dict[str, tuple[str, ...]] = {
    "Condense": (
        "elicit(x, 10)",
        "assign(x1=remove_common_words(x, s))",
        "reveal(x1)",
        "reward(xed(s | x1))",
    ),
    "Alethiometer": (
        'assign(s1="alpha-omega anchor angel ant apple baby beehive bird bread bull camel candle cauldron '
        "chameleon compass cornucopia crocodile dolphin elephant globe griffin helmet horse hourglass lute "
        'madonna marionette moon owl serpent sun sword thunderbolt tree walled-garden wild-man")',
        "elicit(x, 40)",
        "ensure(only_uses_words(s1, x))",
        'assign(x1="Lyra bent over her Alethiometer. The dial spun to these symbols: \\"" + x + "\\". '
        'Lyra looked up and said \\"it tells me this\\":")',
        "reward(xed(s | x1))",
    ),
    "Contrast": (
        "elicit(x, 10)",
        "assign(x1=remove_common_words(x, s1 + s2))",
        "reveal(x1)",
        "reward(black, xed(s1 | x1))",
        "reward(black, dex(s2 | x1))",
    ),
    "Synthesize": (
        "elicit(x, 10)",
        "assign(x1=remove_common_words(x, s1 + s2 + s3))",
        "reveal(x1)",
        "reward(xed(s1 | x1))",
        "reward(xed(s2 | x1))",
        "reward(xed(s3 | x1))",
    ),
    "Horizon": (
        'assign(t1="After the rain", t2=" I eat food")',
        "elicit(x1, 5)",
        "ensure(xed(x1 | s) >= xed(t2 | t1))",
        "elicit(x2, 5)",
        "ensure(xed(x2 | s + x1) >= xed(t2 | t1))",
        "reward(dex(x2 | s))",
    ),
    "Two-Ways": (
        'assign(s="I have a fun story to tell you:")',
        "elicit(t, 10)",
        "reward(nex(s2 | s + s1 + t))",
        "reward(nex(s1 | s + s2 + t))",
        "reward(xent(s2 | s + s1))",
        "reward(xent(s1 | s + s2))",
    ),
}

GENERIC = (
    "{name}. A cross-entropy game: read the code below. Your move fills the elicited register; the "
    "reward lines say what the judge model scores, in bits, and higher is better. Your map score is "
    "your best round."
)


def rule_lines(code: str) -> tuple[str, ...]:
    """The lines of a game's code that decide its moves and score: no comments, blanks or story() draws."""
    kept = (line.strip() for line in code.splitlines())
    return tuple(line for line in kept if line and not line.startswith("#") and "story(" not in line)


def has_own_text(game_name: str, code: str) -> bool:
    """Whether our text for `game_name` describes this code (see the module doc)."""
    return game_name in PRESENTATIONS and RULES.get(game_name) == rule_lines(code)


def presentation(game_name: str, code: str) -> str:
    """Our text for the game when it describes `code`, else the generic explanation."""
    if has_own_text(game_name, code):
        return PRESENTATIONS[game_name]
    return GENERIC.format(name=game_name)
