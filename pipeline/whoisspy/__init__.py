"""Who is Spy: six players, one spy with a different word; describe, vote, find the spy."""
