#!/usr/bin/env python3
"""Userspace stand-in for `tc netem delay D loss P` on kernels built without the netem qdisc.

Run inside a network namespace whose iptables rules send packets to NFQUEUE queue Q:
every queued packet is accepted D ms after it arrived, or dropped with probability P percent.
Speaks the nfnetlink_queue protocol on a raw netlink socket (Python standard library only).
Prints "ready" on stdout once bound to the queue, then "stats <accepted> <dropped>" (packet
counts so far) at most twice a second while they change; runs until killed.

    nfqueue-netem.py QUEUE DELAY_MS LOSS_PERCENT
"""
import heapq
import random
import select
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET = 0
NFQNL_MSG_VERDICT = 1
NFQNL_MSG_CONFIG = 2
NLM_F_REQUEST = 1
NLM_F_ACK = 4
NLMSG_ERROR = 2
NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NFQA_CFG_CMD = 1
NFQA_CFG_PARAMS = 2
NFQA_CFG_QUEUE_MAXLEN = 3
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NF_DROP = 0
NF_ACCEPT = 1


def attr(kind, payload):
    length = 4 + len(payload)
    return struct.pack('=HH', length, kind) + payload + b'\0' * ((4 - length % 4) % 4)


class Queue:
    def __init__(self, num):
        self.num = num
        self.seq = 0
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.bind((0, 0))

    def send(self, msg_type, attrs, flags=NLM_F_REQUEST):
        self.seq += 1
        body = struct.pack('!BBH', socket.AF_UNSPEC, 0, self.num) + b''.join(attrs)
        header = struct.pack('=IHHII', 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg_type, flags, self.seq, 0)
        self.sock.send(header + body)

    def configure(self, maxlen):
        self.send(NFQNL_MSG_CONFIG, [attr(NFQA_CFG_CMD, struct.pack('!BxH', NFQNL_CFG_CMD_BIND, 0))], NLM_F_REQUEST | NLM_F_ACK)
        self.expect_ack()
        self.send(NFQNL_MSG_CONFIG, [attr(NFQA_CFG_PARAMS, struct.pack('!IB', 0, NFQNL_COPY_META)),
                                     attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack('!I', maxlen))], NLM_F_REQUEST | NLM_F_ACK)
        self.expect_ack()

    def expect_ack(self):
        data = self.sock.recv(65536)
        length, msg_type = struct.unpack_from('=IH', data)
        if msg_type == NLMSG_ERROR:
            (err,) = struct.unpack_from('=i', data, 16)
            if err != 0:
                raise OSError(-err, f'nfnetlink_queue refused the configuration (errno {-err})')

    def verdict(self, packet_id, verdict):
        self.send(NFQNL_MSG_VERDICT, [attr(NFQA_VERDICT_HDR, struct.pack('!II', verdict, packet_id))])

    def packet_ids(self, data):
        """Ids of the queued packets in one datagram (several netlink messages may share it)."""
        ids = []
        off = 0
        while off + 16 <= len(data):
            length, msg_type = struct.unpack_from('=IH', data, off)
            if length < 16:
                break
            if msg_type == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
                a = off + 20
                while a + 4 <= off + length:
                    alen, akind = struct.unpack_from('=HH', data, a)
                    if alen < 4:
                        break
                    if akind & 0x7fff == NFQA_PACKET_HDR:
                        ids.append(struct.unpack_from('!I', data, a + 4)[0])
                    a += (alen + 3) & ~3
            off += (length + 3) & ~3
        return ids


def main():
    num, delay_ms, loss = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    q = Queue(num)
    q.configure(65536)
    print('ready', flush=True)
    due = []  # (release time, packet id)
    accepted = dropped = 0
    reported = (0, 0)
    next_report = time.monotonic() + 0.5
    while True:
        timeout = max(0.0, min(due[0][0] if due else next_report, next_report) - time.monotonic())
        readable, _, _ = select.select([q.sock], [], [], timeout)
        if readable:
            try:
                data = q.sock.recv(1 << 20)
            except OSError:
                continue  # ENOBUFS: the kernel dropped notifications; their packets time out as losses
            now = time.monotonic()
            for packet_id in q.packet_ids(data):
                if random.random() * 100 < loss:
                    q.verdict(packet_id, NF_DROP)
                    dropped += 1
                else:
                    heapq.heappush(due, (now + delay_ms / 1000, packet_id))
        now = time.monotonic()
        while due and due[0][0] <= now:
            q.verdict(heapq.heappop(due)[1], NF_ACCEPT)
            accepted += 1
        if now >= next_report:
            next_report = now + 0.5
            if (accepted, dropped) != reported:
                reported = (accepted, dropped)
                print(f'stats {accepted} {dropped}', flush=True)


if __name__ == '__main__':
    main()
