"""Fixed texts the judge uses: story openings for `story()` and the few-shot prompt of `is_true`.

Both are part of what decides a judge's answers, so changing any text here changes stories and
truth verdicts; `PROMPTS_VERSION` goes into the cache keys of anything derived from them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

PROMPTS_VERSION = 1

# Openings the judge continues when it samples a story: short, in many genres and registers, so
# that maps differ in vocabulary and style. A story is the judge's continuation, not the opening.
STORY_OPENINGS: tuple[str, ...] = (
    "The lighthouse keeper had counted the ships every night for forty years, and tonight",
    "Preheat the oven to 200 degrees. While it warms, slice the onions thinly and",
    "Minutes of the village council, Tuesday evening. The chair opened the meeting by",
    "Dear Aunt Rosa, thank you for the parcel. The socks fit perfectly, although",
    "The detective wiped the rain from her glasses and looked again at the ledger.",
    "In the third year of the drought, the river finally gave back what it had taken:",
    "Patch notes, version 2.4: fixed a bug where players could walk through",
    "Abstract. We study the effect of soil temperature on the germination of",
    "Once upon a time, a fox who could not lie went to live among the crows.",
    "BREAKING: Officials confirmed this morning that the city's oldest bridge",
    "Step 3. Attach the left panel to the base using the short screws, making sure",
    "She had packed everything she owned into two suitcases and a cardboard box",
    "The match resumed after the rain delay, and the home side needed eleven runs",
    "Captain's log, day 212. The engines are holding, but the crew has started",
    "To whom it may concern: I am writing to dispute a charge on my account dated",
    "The old man at the chess club always opened with the same move, and every",
    "Chapter One. Nobody in the family talked about the summer of the flood.",
    "How to repot a cactus without getting hurt: first, put on thick gloves and",
    "The museum's new exhibit brings together more than two hundred maps drawn by",
    "When the power went out across the whole valley, the radio station kept",
    "Q: Why does bread go stale faster in the fridge? A: Because the starch",
    "The spaceship had been silent for a week when the message finally arrived.",
    "Grandmother kept her recipes in a tin box, written on the backs of envelopes,",
    "Review: the hotel was clean and close to the station, but the breakfast",
    "In 1854 a physician in London began marking cholera deaths on a street map and",
    "The rules are simple. Each player draws five cards and, on their turn, may",
    "I never meant to become a beekeeper. It started when a swarm settled in",
    "The negotiations had lasted all night, and by dawn both delegations agreed",
    "Welcome aboard. Please make sure your seat belt is fastened and your tray",
    "The poem begins with a single image: a kettle left to boil on an empty stove,",
    "Our quarterly results show revenue growth in every region except",
    "The mountain path narrowed until the two climbers had to walk in single file,",
    "Tip: if your sourdough starter smells like nail polish remover, it is hungry;",
    "The dragon was tired of guarding gold that nobody came to steal, so one spring",
    "He opened the laptop, typed the password from memory, and found that every file",
    "Dear diary, today the new teacher asked us to write about a place we love, and",
    "Scientists tracking a population of seabirds noticed that the chicks were",
    "The judge asked the witness to describe, in her own words, what she saw when",
    "Every morning at six the baker unlocked the shop, switched on the ovens, and",
    "The robot had been built to sort letters, but after the post office closed it",
    "Travel advisory: heavy snow is expected in the northern passes from Friday, and",
    "Instructions for the night shift: check the greenhouse heaters every two hours,",
    "The twins could not agree on anything, least of all on what to do with the",
    "A short history of the pencil begins, surprisingly, with a storm in Cumbria that",
)

# The few-shot frame of is_true/is_false. The judge compares how surprised it is by
# "Answer: true" and "Answer: false" after it; the first token of the scored string ("Answer")
# is not scored, so the verdict rests on the answer word.
_TRUTH_HEADER = (
    "Each claim below is about the texts listed under it (if any). Read the claim, check it "
    "against the texts, and answer true or false.\n\n"
)
_TRUTH_EXAMPLES: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("Water freezes at zero degrees Celsius.", (), True),
    ("The text mentions an animal.", ("The cat slept on the warm roof all afternoon.",), True),
    ("Three is larger than seven.", (), False),
    ("The text is written in French.", ("The meeting starts at nine tomorrow.",), False),
    ("The two texts mean the same thing.", ("It is raining.", "Rain is falling."), True),
    ("The text contains fewer than five words.", ("A long road winds through the quiet hills.",), False),
)


def _claim_block(statement: str, args: Sequence[object]) -> str:
    lines = [f"Claim: {statement}"]
    for number, arg in enumerate(args, start=1):
        # JSON quoting keeps quotes and newlines inside an argument from breaking the frame
        lines.append(f"Text {number}: {json.dumps(str(arg), ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


def truth_prompt(statement: str, args: Sequence[object]) -> str:
    """The text before "Answer: ..." for one claim: header, worked examples, the claim."""
    shots = "".join(
        _claim_block(claim, claim_args) + f"Answer: {'true' if verdict else 'false'}\n\n"
        for claim, claim_args, verdict in _TRUTH_EXAMPLES
    )
    return _TRUTH_HEADER + shots + _claim_block(statement, args)


TRUE_ANSWER = "Answer: true"
FALSE_ANSWER = "Answer: false"
