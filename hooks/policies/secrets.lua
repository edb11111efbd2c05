-- secrets.lua: redact secrets from command outputs before a model sees them.
--
-- The patterns are Go regular expressions (RE2). Where a pattern has a group
-- named "secret", only that group is replaced, so "Authorization: Bearer x"
-- becomes "Authorization: [REDACTED authorization]". The stored output keeps
-- what was printed, for audit; what is shown to an agent is redacted.

local redactions = {
  -- Private key blocks, also when the END line was cut off.
  {label = "private_key", pattern = [=[-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)]=]},
  -- AWS access key ids and secret access keys.
  {label = "aws_access_key", pattern = [=[\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b]=]},
  {label = "aws_secret_key", pattern = [=[(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?(?P<secret>[A-Za-z0-9/+=]{40})]=]},
  -- GitHub, GitLab, Slack.
  {label = "github_token", pattern = [=[\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b]=]},
  {label = "github_token", pattern = [=[\bgithub_pat_[A-Za-z0-9_]{22,255}\b]=]},
  {label = "gitlab_token", pattern = [=[\bglpat-[A-Za-z0-9_\-]{20,}]=]},
  {label = "slack_token", pattern = [=[\bxox[baprs]-[A-Za-z0-9\-]{10,}]=]},
  -- Other well-known API keys.
  {label = "api_key", pattern = [=[\bsk-(?:proj-|ant-[a-z0-9]+-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}]=]},
  {label = "api_key", pattern = [=[\b[rs]k_live_[A-Za-z0-9]{16,}]=]},
  {label = "api_key", pattern = [=[\bAIza[0-9A-Za-z_\-]{35}\b]=]},
  {label = "jwt", pattern = [=[\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}]=]},
  -- Authorization headers (curl -v, HTTP dumps): the value, to the end of the line.
  {label = "authorization", pattern = [=[(?i)\b(?:proxy-)?authorization\s*:\s*(?P<secret>[^\r\n]+)]=]},
  -- Passwords in URLs: scheme://user:password@host.
  {label = "url_password", pattern = [=[(?i)\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:(?P<secret>[^/\s@]+)@]=]},
  -- .env style: NAME_KEY=, NAME_TOKEN=, NAME_SECRET=, NAME_PASSWORD= values.
  {label = "env_secret", pattern = [=[\b(?:[A-Z][A-Z0-9_]*_)?(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?)\s*=\s*(?P<secret>"[^"\r\n]*"|'[^'\r\n]*'|[^\s"']+)]=]},
  -- Quoted values in JSON, YAML and code: "api_key": "…", password = '…'.
  {label = "config_secret", pattern = [=[(?i)\b[a-z0-9_.\-]*(?:api[_\-]?key|secret|token|password|passwd)["']?\s*[:=]\s*["'](?P<secret>[^"'\r\n]{4,})["']]=]},
}

harness.on("observation.*", function(ev, action)
  return {redact = redactions}
end)
