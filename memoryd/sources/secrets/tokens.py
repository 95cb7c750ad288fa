"""Provider token formats: a fixed, published prefix followed by a random body.

Each family names where its format comes from. Most are ported from the rule set of gitleaks
(MIT, `config/gitleaks.toml`, rule ids given as `gitleaks:<id>`), some from trufflehog's detectors
(AGPL: only the public token *format* is taken, as `trufflehog:<detector>`), detect-secrets' plugins
(Apache-2.0, `detect-secrets:<plugin>`) or the provider's own documentation; the OpenClaw default list
(`openclaw`, spec §3.6) is covered too. The regexes are written here, not copied: they are looser
than the originals on purpose, because a transcript mask may err on the side of masking.

* Distinctive prefixes (`ghp_`, `sk-ant-`, `glpat-`, `AKIA`, ...) need no word boundary before them,
  so a token glued to a word (`keyghp_…`, `tokenAKIA…`) is still found.
* Short or word-like prefixes (`sk-`, `SG.`, `SK`, `key-`) need one, or a body only a machine writes.
* Bodies are matched open-ended (`{n,}`), so a token glued to text after it is masked whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from memoryd.sources.secrets.engine import Detector, Hit, Text, regex_finder

_CS = re.ASCII


def _has_digit(token: str) -> bool:
    return any(c.isdigit() for c in token)


def _mixed(token: str) -> bool:
    """Digits and letters both, or both cases: what a machine-made body looks like."""
    has_upper = any(c.isupper() for c in token)
    has_lower = any(c.islower() for c in token)
    return (_has_digit(token) and (has_upper or has_lower)) or (has_upper and has_lower)


# (kind, regex, flags, extra check on the whole match)
_Row = tuple[str, str, int, Callable[[str], bool] | None]

TOKEN_ROWS: tuple[_Row, ...] = (
    # --- AI providers ------------------------------------------------------------------------
    # gitleaks:anthropic-api-key, anthropic-admin-api-key (sk-ant-api03-…, sk-ant-admin01-…), and the
    # OAuth forms (sk-ant-oat01-, sk-ant-ort01-) of the same scheme.
    ("anthropic-key", r"sk-ant-[a-z0-9]{2,12}-[A-Za-z0-9_\-]{16,}", _CS, None),
    # gitleaks:openai-api-key (sk-proj-, sk-svcacct-, sk-admin-; legacy sk-…T3BlbkFJ…).
    ("openai-key", r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{16,}", _CS, None),
    ("openai-key", r"sk-[A-Za-z0-9_\-]{8,}T3BlbkFJ[A-Za-z0-9_\-]{8,}", _CS, None),
    # openclaw `sk-` (OpenAI legacy, DeepSeek, Moonshot, …): a long alphanumeric body may be glued,
    # a shorter one needs a boundary and a machine-made look.
    ("openai-key", r"sk-[A-Za-z0-9]{32,}", _CS, None),
    ("api-key", r"sk-(?<![A-Za-z0-9_\-]sk-)[A-Za-z0-9_\-]{12,}", _CS, _mixed),
    # openclaw gsk_ (Groq); trufflehog:xai (xai-); openclaw, gitleaks:perplexity-api-key (pplx-);
    # trufflehog:replicate (r8_); gitleaks:huggingface-access-token, -organization-api-token.
    ("groq-key", r"gsk_[A-Za-z0-9]{20,}", _CS, None),
    ("xai-key", r"xai-[A-Za-z0-9]{40,}", _CS, None),
    ("perplexity-key", r"pplx-[A-Za-z0-9_\-]{20,}", _CS, None),
    ("replicate-token", r"r8_[A-Za-z0-9]{30,}", _CS, None),
    ("huggingface-token", r"hf_[A-Za-z0-9]{30,}", _CS, None),
    ("huggingface-token", r"api_org_[A-Za-z0-9]{30,}", _CS, None),
    # trufflehog:langsmith (lsv2_pt_/lsv2_sk_); trufflehog:pinecone (pcsk_).
    ("langsmith-key", r"lsv2_(?:pt|sk)_[A-Za-z0-9_]{20,}", _CS, None),
    ("pinecone-key", r"pcsk_[A-Za-z0-9_]{30,}", _CS, None),
    # --- Google ---------------------------------------------------------------------------------
    # gitleaks:gcp-api-key (AIza…); Google's OAuth client secrets (GOCSPX-), access tokens (ya29.)
    # and refresh tokens (1//0…) as documented for its OAuth 2.0 endpoints.
    ("google-api-key", r"AIza[A-Za-z0-9_\-]{30,}", _CS, None),
    ("google-oauth-secret", r"GOCSPX-[A-Za-z0-9_\-]{20,}", _CS, None),
    ("google-oauth-token", r"ya29\.[A-Za-z0-9_\-]{20,}", _CS, None),
    ("google-oauth-token", r"1//0[A-Za-z0-9_\-]{30,}", _CS, None),
    # --- Source hosting -------------------------------------------------------------------------
    # gitleaks:github-pat, github-oauth, github-app-token, github-refresh-token, github-fine-grained-pat.
    ("github-token", r"gh[pousr]_[A-Za-z0-9]{20,}", _CS, None),
    ("github-token", r"github_pat_[A-Za-z0-9_]{20,}", _CS, None),
    # gitleaks:gitlab-pat, -pat-routable, -deploy-token, -feed-token, -runner-authentication-token,
    # -scim-token, -kubernetes-agent-token, -oauth-app-secret, -incoming-mail-token, -cicd-job-token,
    # -feature-flag-client-token, -ptt; gitlab-rrt (GR1348941…).
    ("gitlab-token", r"gl(?:pat|dt|ft|rt|soat|agent|oas|imt|cbt|ffct|ptt)-[A-Za-z0-9_.\-]{20,}", _CS, None),
    ("gitlab-token", r"GR1348941[A-Za-z0-9_\-]{20,}", _CS, None),
    # gitleaks:atlassian-api-token (ATATT3…); trufflehog:bitbucketapppassword (ATBB…).
    ("atlassian-token", r"AT(?:ATT3|BB)[A-Za-z0-9_=\-]{24,}", _CS, None),
    # --- Cloud ----------------------------------------------------------------------------------
    # gitleaks:aws-access-token (key ids; the secret key is found beside it, see AWS_SECRET below).
    ("aws-access-key-id", r"A(?:3T[A-Z0-9]|KIA|SIA|BIA|CCA)[A-Z0-9]{16}", _CS, None),
    # gitleaks:aws-amazon-bedrock-api-key-long-lived (ABSK…).
    ("aws-bedrock-key", r"ABSK[A-Za-z0-9+/]{60,}={0,2}", _CS, None),
    # gitleaks:azure-ad-client-secret (…8Q~…).
    # gitleaks:digitalocean-pat, -access-token, -refresh-token.
    ("digitalocean-token", r"do[opr]_v1_[a-f0-9]{40,}", _CS, None),
    # gitleaks:heroku-api-key-v2; gitleaks:vault-service-token, vault-batch-token (hvs./hvb.; hvr. too);
    # gitleaks:hashicorp-tf-api-token (….atlasv1.…); gitleaks:databricks-api-token (dapi…).
    ("heroku-key", r"HRKU-[A-Za-z0-9_\-]{40,}", _CS, None),
    ("vault-token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,}", _CS, None),
    ("databricks-token", r"dapi[a-f0-9]{32}(?:-\d)?", _CS, None),
    # gitleaks:flyio-access-token; gitleaks:1password-service-account-token, 1password-secret-key;
    # gitleaks:pulumi-api-token, doppler-api-token, planetscale-*; trufflehog:supabasetoken (sbp_);
    # trufflehog:dockerhub (dckr_pat_).
    ("flyio-token", r"f(?:o1_[A-Za-z0-9_\-]{40,}|m[12][ar]?_[A-Za-z0-9+/]{60,}={0,3})", _CS, None),
    ("1password-token", r"ops_eyJ[A-Za-z0-9+/]{60,}={0,3}", _CS, None),
    ("1password-secret-key", r"A3-[A-Z0-9]{6}-[A-Z0-9\-]{17,}", _CS, None),
    ("pulumi-token", r"pul-[a-f0-9]{40}", _CS, None),
    ("doppler-token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{30,}", _CS, None),
    ("planetscale-token", r"pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.\-]{30,}", _CS, None),
    ("supabase-token", r"sbp_[a-f0-9]{40}", _CS, None),
    ("dockerhub-token", r"dckr_pat_[A-Za-z0-9_\-]{20,}", _CS, None),
    # gitleaks:grafana-cloud-api-token, grafana-service-account-token, grafana-api-key.
    ("grafana-token", r"gl(?:c|sa)_[A-Za-z0-9+/_]{32,}={0,3}", _CS, None),
    ("grafana-token", r"eyJrIjoi[A-Za-z0-9]{40,}={0,3}", _CS, None),
    # gitleaks:new-relic-user-api-key, -insert-key, -browser-api-token; sentry-user-token, -org-token;
    # gitleaks:dynatrace-api-token; gitleaks:linear-api-key; gitleaks:notion-api-token (and Notion's
    # older `secret_` integration tokens).
    ("newrelic-key", r"NR(?:AK|II|JS)-[A-Za-z0-9\-]{19,}", _CS, None),
    ("sentry-token", r"sntry[us]_[A-Za-z0-9+/=_]{40,}", _CS, None),
    ("dynatrace-token", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{40,}", _CS, None),
    ("linear-key", r"lin_api_[A-Za-z0-9]{30,}", _CS, None),
    ("notion-token", r"ntn_[A-Za-z0-9]{40,}", _CS, None),
    ("notion-token", r"secret_[A-Za-z0-9]{43}(?![A-Za-z0-9])", _CS, _mixed),
    # --- Package registries ---------------------------------------------------------------------
    # openclaw, gitleaks:npm-access-token; gitleaks:pypi-upload-token; gitleaks:rubygems-api-token;
    # gitleaks:clojars-api-token; trufflehog:nugetapikey (oy2…); gitleaks:readme-api-token, postman-api-token.
    # npm's own tokens carry 36 characters; a shorter machine-made body after the prefix is masked too.
    ("npm-token", r"npm_[A-Za-z0-9]{20,}", _CS, _mixed),
    ("pypi-token", r"pypi-Ag[A-Za-z0-9_\-]{50,}", _CS, None),
    ("rubygems-token", r"rubygems_[a-f0-9]{48}", _CS, None),
    ("clojars-token", r"CLOJARS_[A-Za-z0-9]{60}", _CS, None),
    ("nuget-key", r"oy2(?<![A-Za-z0-9_\-]oy2)[a-z0-9]{43}", _CS, None),
    ("readme-token", r"rdme_[a-z0-9]{70}", _CS, None),
    ("postman-token", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", _CS, None),
    # --- Payments -------------------------------------------------------------------------------
    # gitleaks:stripe-access-token (sk_/rk_ live/test/prod; publishable pk_ keys are public);
    # Stripe's webhook signing secrets (whsec_); gitleaks:square-access-token (sq0atp-, EAAA…) and
    # Square's application secrets (sq0csp-); trufflehog:razorpay (rzp_); gitleaks:shopify-*;
    # trufflehog:braintreepayments (access_token$production$…).
    # Glued prefixes are allowed, so a machine-made body is required: `mask_test_characters` is a name.
    ("stripe-key", r"sk_(?:live|test|prod)_[A-Za-z0-9]{10,}", _CS, _mixed),
    ("stripe-key", r"rk_(?:live|test|prod)_[A-Za-z0-9]{10,}", _CS, _mixed),
    ("stripe-webhook-secret", r"whsec_[A-Za-z0-9+/=]{20,}", _CS, None),
    ("square-token", r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}", _CS, None),
    ("square-token", r"EAAA(?<![A-Za-z0-9_\-]EAAA)[A-Za-z0-9_\-]{40,}", _CS, None),
    ("razorpay-key", r"rzp_(?:live|test)_[A-Za-z0-9]{14,}", _CS, None),
    ("shopify-token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", _CS, None),
    ("braintree-token", r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}", _CS, None),
    # gitleaks:shippo-api-token, easypost-api-token, duffel-api-token.
    ("shippo-token", r"shippo_(?:live|test)_[a-fA-F0-9]{40}", _CS, None),
    ("easypost-token", r"EZ[AT]K[A-Za-z0-9]{54}", _CS, None),
    ("duffel-token", r"duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}", _CS, None),
    # --- Messaging and mail ---------------------------------------------------------------------
    # openclaw, gitleaks:slack-bot-token, -user-token, -app-token, -legacy-*, -config-*; slack-webhook-url.
    ("slack-token", r"xox[abporsce](?:\.xox[bp])?-[A-Za-z0-9\-]{10,}", _CS, None),
    ("slack-token", r"xapp-[A-Za-z0-9\-]{10,}", _CS, None),
    ("slack-webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}", _CS, None),
    # trufflehog:discordwebhook; detect-secrets:DiscordBotTokenDetector (three dotted base64 parts).
    ("discord-webhook", r"/api/webhooks/\d{5,}/[A-Za-z0-9_\-]{40,}", _CS, None),
    # gitleaks:microsoft-teams-webhook.
    ("teams-webhook", r"webhook\.office\.com/webhookb2/[A-Za-z0-9@/\-]{40,}", _CS, None),
    # openclaw (Telegram bot tokens, bare and in Bot API URLs); gitleaks:telegram-bot-api-token.
    # gitleaks:twilio-api-key (SK + 32 hex); gitleaks:sendgrid-api-token (SG.<id>.<secret>);
    # gitleaks:sendinblue-api-token; gitleaks:mailgun-private-api-token (key-…); mailchimp (…-usNN).
    ("twilio-key", r"SK[0-9a-fA-F]{32}(?![A-Za-z0-9])", _CS, None),
    ("sendgrid-key", r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", _CS, None),
    ("sendinblue-key", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}", _CS, None),
    ("mailgun-key", r"key-(?<![A-Za-z0-9_\-]key-)[a-f0-9]{32}", _CS, None),
    # --- Generic formats ------------------------------------------------------------------------
    # gitleaks:jwt (header.payload.signature, each base64url; the signature may be empty: alg none).
    ("jwt", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-+/=]*", _CS, None),
    # gitleaks:age-secret-key; gitleaks:openshift-user-token (sha256~…).
    ("age-secret-key", r"AGE-SECRET-KEY-1[0-9A-Z]{50,}", _CS, None),
    ("openshift-token", r"sha256~[A-Za-z0-9_\-]{43}", _CS, None),
)


# Formats whose first character is not fixed: each runs over the whole text, and only when its
# keyword occurs. (kind, keyword, regex, extra check)
SPECIAL_ROWS: tuple[tuple[str, str, str, Callable[[str], bool] | None], ...] = (
    # gitleaks:azure-ad-client-secret (…8Q~…); gitleaks:hashicorp-tf-api-token (….atlasv1.…).
    ("azure-client-secret", "q~", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}", None),
    ("terraform-token", "atlasv1", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{40,}", None),
    # gitleaks:mailchimp-api-key (…-usNN).
    ("mailchimp-key", "-us", r"[a-f0-9](?<![A-Za-z0-9][a-f0-9])[a-f0-9]{31}-us\d{1,2}(?![A-Za-z0-9])", None),
)
# Formats that start with one of a few characters: part of the run scan, one branch per character.
# (kind, first characters, the rest of the regex, extra check)
SET_ROWS: tuple[tuple[str, str, str, Callable[[str], bool] | None], ...] = (
    # openclaw (Telegram bot tokens, bare and in Bot API URLs); gitleaks:telegram-bot-api-token.
    ("telegram-token", "0123456789", r"(?<![0-9].)\d{5,}:[A-Za-z0-9_\-]{20,}", None),
    # detect-secrets:DiscordBotTokenDetector (three dotted base64url parts, the first starting M, N or O).
    (
        "discord-token",
        "MNO",
        r"(?<![A-Za-z0-9_\-].)[A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,}",
        _has_digit,
    ),
)


def _combined() -> tuple[re.Pattern[str], dict[str, list[tuple[re.Pattern[str], str, Callable[[str], bool] | None]]]]:
    """All literal-first formats as one alternation grouped by first character (`g(?:hp_…|lpat-…)`):
    the regex engine then skips a branch on one character compare, and a run is scanned in one
    C-level pass. Which format matched is found again among the few of that first character."""
    by_first: dict[str, list[tuple[re.Pattern[str], str, Callable[[str], bool] | None]]] = {}
    sources: dict[str, list[str]] = {}
    rows = [(kind, source, flags, accept) for kind, source, flags, accept in TOKEN_ROWS]
    rows += [(kind, first + rest, _CS, accept) for kind, firsts, rest, accept in SET_ROWS for first in firsts]
    for kind, source, flags, accept in rows:
        first = source[0]
        if not (first.isalnum() or first in "/_-"):
            raise ValueError(f"{kind}: a token format must start with a fixed character")
        by_first.setdefault(first, []).append((re.compile(source, flags), kind, accept))
        sources.setdefault(first, []).append(source[1:])
    branches = [f"{re.escape(first)}(?:{'|'.join(rests)})" for first, rests in sources.items()]
    return re.compile("|".join(branches), re.ASCII), by_first


_TOKENS, _BY_FIRST = _combined()


def _which(text: str, match: re.Match[str]) -> tuple[str, Callable[[str], bool] | None]:
    start = match.start()
    for pattern, kind, accept in _BY_FIRST[text[start]]:
        if pattern.match(text, start, match.end()) is not None:
            return kind, accept
    return "api-key", None


def find_tokens(scan: Text) -> Iterator[Hit]:
    text = scan.text
    for run_start, run_end in scan.runs:
        for match in _TOKENS.finditer(text, run_start, run_end):
            kind, accept = _which(text, match)
            if accept is None or accept(match.group(0)):
                yield match.start(), match.end(), kind


def token_detectors(rank: int) -> list[Detector]:
    detectors = [Detector((), find_tokens, rank)]
    for kind, keyword, source, accept in SPECIAL_ROWS:
        detectors.append(
            Detector((keyword,) if keyword else (), regex_finder(kind, re.compile(source, _CS), 0, accept), rank)
        )
    return detectors
