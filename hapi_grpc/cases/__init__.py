"""The evaluation case format: what capture writes, `hapi-grpc cases review`
labels and `hapi-grpc eval` replays (`case`: the files of a case; `expected`,
`constraints`: what it scores; `provenance`, `labels`: where a captured case
comes from and who set its answer; `review`: the command)."""
