"""The leaderboard benchmark: combine every benchmark's ratings, publish a versioned leaderboard and a
static replay site, and compare leaderboard versions (`diff`) and roster entries (`compare`)."""
