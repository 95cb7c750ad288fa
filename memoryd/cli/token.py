"""`memoryd token create|list|revoke`: the HTTP face's bearer tokens (memoryd.server.tokens).

`create` prints the token once, on stdout, and nothing keeps it: the state directory stores its
hash. The file is read again by the daemon on the next request, so no reload is needed.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from memoryd.cli.exits import EXIT_OK, EXIT_USAGE
from memoryd.cli.output import dump
from memoryd.config import Config


def run(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    from memoryd.server.tokens import TokenStore, parse_duration

    store = TokenStore(cfg.state_dir)
    if args.action == "create":
        agents = [a.strip() for a in (args.agent or "").split(",") if a.strip()]
        if not agents:
            sys.stderr.write("memoryd token create: name the agent(s) the token serves: --agent ID[,ID…]\n")
            return EXIT_USAGE
        for agent in agents:
            cfg.agent(agent)  # an unknown agent is an error naming the configured ones
        expires = parse_duration(args.expires) if args.expires else None
        token, record = store.create(agents, read_only=args.read_only, expires_s=expires)
        if args.json:
            out.write(dump({"token": token, **record.describe()}) + "\n")
        else:
            out.write(token + "\n")
            access = "read-only" if record.read_only else "read-write"
            until = f", expires {record.describe()['expires']}" if record.expires_ms else ""
            sys.stderr.write(
                f"token {record.id}: {access} for {', '.join(record.agents)}{until}. It is shown only this once; "
                "send it as 'Authorization: Bearer <token>' (or log in to the viewer with it).\n"
            )
        return EXIT_OK
    if args.action == "list":
        records = [r.describe() for r in store.records()]
        if args.json:
            out.write(dump(records) + "\n")
        elif not records:
            out.write("no tokens (memoryd token create --agent ID)\n")
        else:
            for record, r in zip(store.records(), records, strict=True):
                names = ",".join(record.agents)
                state = "expired" if r["expired"] else f"expires {r['expires']}" if r["expires"] else "no expiry"
                out.write(f"{r['id']}  {r['access']:<10}  {names}  created {r['created']}  {state}\n")
        return EXIT_OK
    if not args.id:
        sys.stderr.write("memoryd token revoke: which token? give its id (memoryd token list)\n")
        return EXIT_USAGE
    record = store.revoke(args.id)
    out.write(f"revoked {record.id} ({', '.join(record.agents)})\n")
    return EXIT_OK
