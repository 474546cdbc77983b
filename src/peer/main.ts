// Entry of dist/peer.js (CLI and forked child). Filled by the peer runtime.
console.log('goal-swarm-peer: not yet available')
