"""How each reference game is explained to a player: our own words, one text per game.

The reference benchmark ships a presentation function per game (Python that renders the prompt).
We do not run or copy it: an imported game gets the text below as its description (the leading
`#` block of its program), which the play prompts show with the game's code. Games we have no text
for get a generic explanation built from their code.
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
        "Synthesize. You get several stories. Write one short prefix that helps the judge predict all "
        "of them; words of the stories are deleted from it first. Score: the sum of what your prefix "
        "saves on each story, in bits; higher is better. Your map score is your best round."
    ),
    "Horizon": (
        "Horizon. You get the beginning of a text. Write a continuation that makes the text's real "
        "ending predictable for the judge, within the token limit. Score: the bits your continuation "
        "saves on the ending; higher is better. Your map score is your best round."
    ),
    "Two-Ways": (
        "Two-Ways. Write a short text that works as a prefix for the given story and is itself "
        "predictable after the story, within the token limit. Score: the bits saved in both directions; "
        "higher is better. Your map score is your best round."
    ),
}

GENERIC = (
    "{name}. A cross-entropy game: read the code below. Your move fills the elicited register; the "
    "reward lines say what the judge model scores, in bits, and higher is better. Your map score is "
    "your best round."
)


def presentation(game_name: str) -> str:
    return PRESENTATIONS.get(game_name, GENERIC.format(name=game_name))
