// A forked child that speaks the peer IPC protocol badly on purpose, to test the parent-side
// client (src/peer/ipc/parent.ts) against a real process: `node ipc-child.mjs MODE`.
//   stubborn: sends `ready`, then ignores `shutdown` and SIGTERM (only SIGKILL ends it)
//   chatty:   sends an invalid message, a `ready`, a 70 000-character stdout line without a
//             newline cut, two lines in one write; answers submit-goal with `error`, never
//             answers get-output, and exits 0 on `shutdown`
const mode = process.argv[2]
const ready = { type: 'ready', peer_id: '12D3KooWtest', role: 'observer', swarm: 'default', listen: ['/ip4/127.0.0.1/tcp/1'] }
process.on('disconnect', () => { process.exit(0) })
if (mode === 'stubborn') {
  process.on('SIGTERM', () => { process.stderr.write('ignoring SIGTERM\n') })
  process.on('message', () => {})
  process.send(ready)
} else {
  process.send({ type: 'ready', peer_id: 42 })
  process.send(ready)
  process.stdout.write('x'.repeat(70_000) + '\nfirst line\r\nsecond line\n')
  process.on('message', (m) => {
    if (m.type === 'shutdown') process.exit(0)
    if (m.type === 'submit-goal') process.send({ type: 'error', request_id: m.request_id, message: `refusing "${m.text}"` })
  })
}
setInterval(() => {}, 1000)
