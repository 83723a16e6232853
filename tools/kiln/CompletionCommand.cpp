// kiln completion bash|zsh|fish: a completion script made from the CLI's own definition, so it
// lists exactly the subcommands and options this kiln has. zsh runs the bash script through
// bashcompinit; fish gets its own `complete` lines, with each option's description.
#include "tools/kiln/Commands.h"

#include <cstdio>
#include <string>
#include <vector>

namespace kiln::cli {

namespace {

// The long options (and -o style short ones) of one (sub)command, space-separated.
std::string optionWords(const CLI::App &cmd) {
  std::string w;
  for (const CLI::Option *o : cmd.get_options()) {
    for (const std::string &n : o->get_lnames()) w += " --" + n;
    for (const std::string &n : o->get_snames()) w += " -" + n;
  }
  return w.empty() ? w : w.substr(1);
}

// The subcommands users see (hidden ones, like the tuner's measuring child, have no group).
std::vector<const CLI::App *> visible(const CLI::App &cmd) {
  std::vector<const CLI::App *> v;
  for (const CLI::App *s : cmd.get_subcommands({}))
    if (!s->get_group().empty()) v.push_back(s);
  return v;
}

std::string subcommandWords(const CLI::App &cmd) {
  std::string w;
  for (const CLI::App *s : visible(cmd)) w += (w.empty() ? "" : " ") + s->get_name();
  return w;
}

std::string bashScript(const CLI::App &app) {
  std::string s =
      "# bash completion for kiln: source <(kiln completion bash), or save it as\n"
      "# /etc/bash_completion.d/kiln. Generated from this kiln's own command definitions.\n"
      "_kiln() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} cmd= sub= i words=\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    case ${COMP_WORDS[i]} in\n"
      "      -*) ;;\n"
      "      *) if [[ -z $cmd ]]; then cmd=${COMP_WORDS[i]}; elif [[ -z $sub ]]; then sub=${COMP_WORDS[i]}; fi ;;\n"
      "    esac\n"
      "  done\n"
      "  case $cmd in\n"
      "    '') words='" +
      subcommandWords(app) + " " + optionWords(app) + "' ;;\n";
  for (const CLI::App *c : visible(app)) {
    s += "    " + c->get_name() + ")";
    if (visible(*c).empty()) {
      // A leaf command: options after '-', files otherwise.
      s += " [[ $cur == -* ]] && words='" + optionWords(*c) + "' ;;\n";
      continue;
    }
    s += "\n      case $sub in\n        '') words='" + subcommandWords(*c) + " " + optionWords(*c) + "' ;;\n";
    for (const CLI::App *g : visible(*c))
      s += "        " + g->get_name() + ") [[ $cur == -* ]] && words='" + optionWords(*g) + "' ;;\n";
    s += "      esac ;;\n";
  }
  s += "  esac\n"
       "  if [[ -n $words ]]; then COMPREPLY=($(compgen -W \"$words\" -- \"$cur\")); fi\n"
       "  if [[ ${#COMPREPLY[@]} -eq 0 ]]; then COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
       "}\n"
       "complete -o filenames -F _kiln kiln\n";
  return s;
}

// fish: single-quoted text ('\'' and '\\' escaped), the first line of a description, at most 90
// characters.
std::string fishQuoted(std::string text) {
  text = text.substr(0, text.find('\n'));
  if (text.size() > 90) text = text.substr(0, 87) + "...";
  std::string q = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') q += '\\';
    q += c;
  }
  return q + "'";
}

// One `complete` line per option of `cmd`, shown when `condition` holds (empty: always).
std::string fishOptions(const CLI::App &cmd, const std::string &condition) {
  std::string s;
  for (const CLI::Option *o : cmd.get_options()) {
    if (o->get_lnames().empty() && o->get_snames().empty()) continue;  // (positional)
    s += "complete -c kiln";
    if (!condition.empty()) s += " -n " + fishQuoted(condition);
    for (const std::string &n : o->get_lnames()) s += " -l " + n;
    for (const std::string &n : o->get_snames()) s += " -s " + n;
    if (o->get_expected_max() != 0) s += " -r";  // (takes a value: files complete)
    s += " -d " + fishQuoted(o->get_description()) + "\n";
  }
  return s;
}

std::string fishScript(const CLI::App &app) {
  std::string s = "# fish completion for kiln: kiln completion fish > ~/.config/fish/completions/kiln.fish\n"
                  "# Generated from this kiln's own command definitions.\n";
  s += fishOptions(app, "");
  for (const CLI::App *c : visible(app)) {
    s += "complete -c kiln -f -n '__fish_use_subcommand' -a " + c->get_name() + " -d " +
         fishQuoted(c->get_description()) + "\n";
    const std::string in = "__fish_seen_subcommand_from " + c->get_name(), subs = subcommandWords(*c);
    s += fishOptions(*c, in);
    for (const CLI::App *g : visible(*c)) {  // (nested subcommands: debug precision)
      s += "complete -c kiln -f -n " + fishQuoted(in + "; and not __fish_seen_subcommand_from " + subs) + " -a " +
           g->get_name() + " -d " + fishQuoted(g->get_description()) + "\n";
      s += fishOptions(*g, in + "; and __fish_seen_subcommand_from " + g->get_name());
    }
  }
  return s;
}

}  // namespace

Runner addCompletionCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("completion", "Print a shell completion script (bash, zsh or fish)");
  auto shell = std::make_shared<std::string>();
  cmd->add_option("shell", *shell, "The shell (bash, zsh, fish)")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  return [=, &app]() -> int {
    if (!*cmd) return -1;
    if (*shell == "fish")
      std::fputs(fishScript(app).c_str(), stdout);
    else if (*shell == "zsh")
      std::fputs(("# zsh completion for kiln: source <(kiln completion zsh) in ~/.zshrc (after compinit). zsh runs\n"
                  "# the bash script through bashcompinit.\n"
                  "autoload -U +X bashcompinit && bashcompinit\n" +
                  bashScript(app))
                     .c_str(),
                 stdout);
    else
      std::fputs(bashScript(app).c_str(), stdout);
    return 0;
  };
}

}  // namespace kiln::cli
