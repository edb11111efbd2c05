-- trimming.lua: add the failure words of a few tools to what the trimmer
-- looks for in the middle of a long output.
--
-- The trimmer's defaults already know the shapes of go test, pytest,
-- unittest, node --test (TAP and spec), cargo/rustc, gcc/clang and make
-- (case-insensitive words such as error, fail, panic, traceback, not ok,
-- and blocks: tracebacks, panics, --- FAIL with its explanation, compiler
-- errors with excerpt and caret), within a character budget. This policy
-- only adds, for the commands the action runs (harness.commands, so
-- `cd x && go test ./...` and `timeout 60 pytest` count), the words those
-- defaults lack; it sets no head, tail or max_keep, which would fight the
-- budget. Keywords ignore ASCII case.

local profiles = {
  go_test = {keep = {"data race", "race detected", "timed out"}},
  go_build = {keep = {".go:", "undefined:", "cannot use", "not used"}},
  pytest = {keep = {"short test summary"}},
  jest = {keep = {"●", "expected", "received"}},
  cargo = {keep = {"---- "}},
  cc = {keep = {"warning:"}},
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
  elseif n:sub(1, 6) == "python" then
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

-- contains reports whether list, a short array, holds v. The sets below
-- are lists rather than string-keyed tables: a table made empty and
-- given its first string key later costs gopher-lua a 32-slot Go map,
-- on every observation.
local function contains(list, v)
  for i = 1, #list do
    if list[i] == v then return true end
  end
  return false
end

-- add_new appends to keep each word of words it does not hold yet.
local function add_new(keep, words)
  for _, k in ipairs(words) do
    if not contains(keep, k) then keep[#keep + 1] = k end
  end
end

harness.on("observation.cmd_output", function(ev, action)
  if action == nil or action.command == nil or action.command == "" then return end
  local seen, keep = {}, {}
  for _, c in ipairs(harness.commands(action.command)) do
    local p = profile_of(c)
    if p and not contains(seen, p) then
      seen[#seen + 1] = p
      local prof = profiles[p] or {keep = {}}
      if p == "make" then
        -- make usually runs a compiler: keep its lines too.
        add_new(keep, profiles.cc.keep)
      end
      add_new(keep, prof.keep)
    end
  end
  if #keep > 0 then return {trim = {keep = keep}} end
end)
