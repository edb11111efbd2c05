-- trimming.lua: keep the lines that explain a failure when test runners and
-- compilers print more than a model should read.
--
-- The profile is chosen from the commands the action runs (harness.commands,
-- so `cd x && go test ./...` and `timeout 60 pytest` count); the trimmer
-- keeps the head, the tail and up to max_keep middle lines containing one
-- of the keep strings (case-sensitive substrings), besides its defaults
-- (Error, Traceback, Exception, panic:, FAIL, fatal).

local profiles = {
  go_test = {head = 10, tail = 40, max_keep = 80,
    keep = {"--- FAIL", "FAIL", "panic:", "_test.go:", "Error Trace:", "Error:", "DATA RACE", "race detected", "timed out", "build failed"}},
  go_build = {head = 10, tail = 30, max_keep = 60,
    keep = {".go:", "undefined:", "cannot use", "imported and not used", "declared and not used", "# "}},
  pytest = {head = 10, tail = 40, max_keep = 80,
    keep = {"FAILED", "ERROR", "Error", "E   ", "assert", "Traceback", "____ ", "short test summary", ".py:"}},
  unittest = {head = 10, tail = 30, max_keep = 60,
    keep = {"FAIL:", "ERROR:", "Traceback", "Error", "AssertionError", "File \""}},
  jest = {head = 10, tail = 40, max_keep = 80,
    keep = {"✕", "●", "FAIL", "Expected", "Received", "Error", "not ok", "failing"}},
  tap = {head = 10, tail = 30, max_keep = 80,
    keep = {"not ok", "# fail", "error:", "failureType", "expected:", "actual:", "Error", "at:"}},
  cargo = {head = 10, tail = 40, max_keep = 80,
    keep = {"error[", "error:", "panicked at", "FAILED", "failures:", "---- ", "-->", "test result:"}},
  cc = {head = 10, tail = 30, max_keep = 60,
    keep = {"error:", "warning:", "undefined reference", "fatal error", "In function", "ld returned"}},
  make = {head = 10, tail = 30, max_keep = 60,
    keep = {"error:", "Error ", "*** ", "undefined reference", "No rule to make target", "fatal error", "FAILED"}},
}

local compilers = {gcc = true, ["g++"] = true, cc = true, ["c++"] = true, clang = true, ["clang++"] = true, tcc = true}
local makers = {make = true, gmake = true, ninja = true, cmake = true, meson = true}

-- first returns the first operand of args (the subcommand), skipping flags.
local function first(args, from)
  for i = from or 1, #args do
    if args[i]:sub(1, 1) ~= "-" then return args[i], i end
  end
  return nil
end

local function profile_of(c)
  local n, args = c.name, c.args
  if n == "go" then
    local sub = first(args)
    if sub == "test" then return "go_test" end
    if sub == "build" or sub == "vet" or sub == "run" or sub == "install" then return "go_build" end
  elseif n == "pytest" or n == "py.test" or n == "tox" or n == "nox" then
    return "pytest"
  elseif n:match("^python") then
    for i, a in ipairs(args) do
      if a == "-m" then
        local mod = args[i + 1]
        if mod == "pytest" then return "pytest" end
        if mod == "unittest" then return "unittest" end
      end
    end
  elseif n == "jest" or n == "vitest" or n == "mocha" then
    return "jest"
  elseif n == "npx" or n == "bunx" or n == "pnpx" then
    local tool = first(args)
    if tool == "jest" or tool == "vitest" or tool == "mocha" then return "jest" end
    if tool == "tap" or tool == "tape" then return "tap" end
  elseif n == "npm" or n == "yarn" or n == "pnpm" or n == "bun" then
    local sub, i = first(args)
    if sub == "test" or sub == "t" then return "jest" end
    if sub == "run" and first(args, i + 1) and first(args, i + 1):match("test") then return "jest" end
  elseif n == "node" then
    for _, a in ipairs(args) do
      if a == "--test" then return "tap" end
    end
  elseif n == "tap" or n == "tape" then
    return "tap"
  elseif n == "cargo" then
    local sub = first(args)
    if sub == "test" or sub == "build" or sub == "check" or sub == "clippy" or sub == "run" or sub == "nextest" then return "cargo" end
  elseif n == "rustc" then
    return "cargo"
  elseif compilers[n] then
    return "cc"
  elseif makers[n] then
    return "make"
  end
  return nil
end

harness.on("observation.cmd_output", function(ev, action)
  if action == nil or action.command == nil or action.command == "" then return end
  local trim, seen, keepSeen = nil, {}, {}
  for _, c in ipairs(harness.commands(action.command)) do
    local p = profile_of(c)
    if p and not seen[p] then
      seen[p] = true
      local prof = profiles[p]
      if trim == nil then
        trim = {head = prof.head, tail = prof.tail, max_keep = prof.max_keep, keep = {}}
      end
      if p == "make" then
        -- make usually runs a compiler: keep its lines too.
        for _, k in ipairs(profiles.cc.keep) do
          if not keepSeen[k] then keepSeen[k] = true; trim.keep[#trim.keep + 1] = k end
        end
      end
      for _, k in ipairs(prof.keep) do
        if not keepSeen[k] then keepSeen[k] = true; trim.keep[#trim.keep + 1] = k end
      end
    end
  end
  if trim then return {trim = trim} end
end)
