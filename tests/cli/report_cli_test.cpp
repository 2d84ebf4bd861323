// strata report: one self-contained HTML page of a results store with an explore sweep, a
// simulation, a validation and a real run in it, loaded in headless Chromium (Debian's
// chromium): it renders with no console message, its script runs to its end, it shows the
// expected tables, and it loads nothing from anywhere (docs/results.md).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_process.hpp"

namespace {

namespace fs = std::filesystem;
using strata_test::Outcome;

class HtmlReport : public strata_test::CliProcess {
 protected:
  HtmlReport() : CliProcess("strata-report-", true) {}

  std::string slurp(const std::string& name) const {
    std::ifstream in(path(name));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // Chromium's DOM of the page after its scripts ran (`hash`: a fragment to open it at), and
  // the console messages it logged.
  bool chromium(const std::string& page, const std::string& hash, std::string& dom,
                std::string& console) const {
    if (std::system("command -v chromium >/dev/null 2>&1") != 0) return false;
    const std::string cmd =
        "chromium --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 "
        "--virtual-time-budget=2000 --dump-dom 'file://" +
        path(page) + hash + "' >" + path("dom.html") + " 2>" + path("chromium.log");
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    dom = slurp("dom.html");
    console.clear();
    std::istringstream log(slurp("chromium.log"));
    for (std::string line; std::getline(log, line);)
      if (line.find(":CONSOLE") != std::string::npos) console += line + "\n";
    return true;
  }
};

const char* const kCalibration = R"({"schema_version": 2, "format": "strata-calibration",
  "flops_efficiency": {"linear_fwd/fp32": 0.5},
  "transports": {"threads": {"p2p_alpha_s": 2e-5, "p2p_beta_s_per_byte": 1e-10, "allreduce_alpha_s": 1e-5,
                             "allreduce_beta_s_per_byte": 2e-10, "allreduce_ranks": 2}},
  "host": {"name": "box", "cores": 2, "flops_fp32": 8e10, "flops_fp64": 4e10, "mem_bw": 2e10}})";

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The cells of each body row of the table with this id, as text (tags dropped).
std::vector<std::vector<std::string>> table_cells(const std::string& html, const std::string& id) {
  std::vector<std::vector<std::string>> rows;
  const auto at = html.find("<table class=\"sortable\" id=\"" + id + "\"");
  if (at == std::string::npos) return rows;
  const auto body = html.find("<tbody>", at), end = html.find("</tbody>", at);
  for (auto tr = html.find("<tr", body); tr != std::string::npos && tr < end; tr = html.find("<tr", tr + 3)) {
    const auto close = html.find("</tr>", tr);
    rows.emplace_back();
    for (auto td = html.find("<td>", tr); td != std::string::npos && td < close;
         td = html.find("<td>", td + 4)) {
      const std::string raw = html.substr(td + 4, html.find("</td>", td) - td - 4);
      std::string text;
      bool tag = false;
      for (char c : raw) {
        if (c == '<') tag = true;
        if (!tag) text += c;
        if (c == '>') tag = false;
      }
      rows.back().push_back(text);
    }
  }
  return rows;
}

TEST_F(HtmlReport, OnePageOfTheStoreThatChromiumRendersWithNoConsoleMessage) {
  const std::string platforms = std::string(STRATA_SOURCE_DIR) + "/platforms/";
  std::ofstream(path("c.json")) << kCalibration;
  ASSERT_EQ(run("explore --platform " + platforms +
                "a100-node-8.xml --model gpt2-small --set layers=2 --top 4 --perfetto best.json --db s.db")
                .rc,
            0);
  ASSERT_EQ(run("simulate --model gpt2-small --set layers=2 --strategy dp=4 --platform " + platforms +
                "a100-node-8.xml --perfetto sim.json --db s.db")
                .rc,
            0);
  Outcome r =
      run("validate --model mlp --strategy dp=2 --calibration c.json --runs 2 --warmup 1 --no-pin "
          "--perfetto v.json --svg v.svg --db s.db");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run("run --model mlp --strategy dp=2 --epochs 2 --no-pin --db s.db");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run("report --db s.db -o r.html");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string html = slurp("r.html");
  // Self-contained: no resource from anywhere (SVG's namespace is a name, not a load).
  std::string rest = html;
  for (std::size_t at; (at = rest.find("http://www.w3.org/2000/svg")) != std::string::npos;)
    rest.erase(at, 26);
  EXPECT_EQ(rest.find("http://"), std::string::npos);
  EXPECT_EQ(rest.find("https://"), std::string::npos);
  EXPECT_EQ(rest.find(" src="), std::string::npos);
  EXPECT_EQ(rest.find("<link"), std::string::npos);
  // Every row of the store, each reachable by its key, each spec once by its experiment hash.
  const nlohmann::json rows = nlohmann::json::parse(run("query --db s.db --json").out)["rows"];
  ASSERT_GT(rows.size(), 100u);
  EXPECT_EQ(count(html, "<tr id=\"row-"), rows.size());
  std::set<std::string> specs;
  for (const auto& row : rows) {
    EXPECT_NE(html.find("<tr id=\"row-" + row["key"].get<std::string>() + "\">"), std::string::npos)
        << row["key"];
    if (row["spec"].is_string() && !row["spec"].get<std::string>().empty())
      specs.insert(row["experiment_hash"].get<std::string>());
  }
  EXPECT_EQ(count(html, "<details id=\"spec-"), specs.size());
  for (const std::string& h : specs)
    EXPECT_NE(html.find("<details id=\"spec-" + h + "\">"), std::string::npos);
  // The sections: the sweep's group, the validation, the real run; the files as links beside the report.
  EXPECT_NE(html.find("<h2>gpt2-small on a100-node-8.xml</h2>"), std::string::npos);
  EXPECT_NE(html.find("id=\"validation\""), std::string::npos);
  EXPECT_NE(html.find("id=\"real\""), std::string::npos);
  for (const char* file : {"best.json", "sim.json", "v.json", "v.svg"})
    EXPECT_NE(html.find(std::string("href=\"") + file + "\""), std::string::npos) << file;
  // The best table starts with the sweep's best; the front of time and memory starts there too,
  // and goes down in memory (shown to 0.01 GiB) as it goes up in time.
  const auto best = table_cells(html, "g0-best");
  const auto front = table_cells(html, "g0-front-memory");
  ASSERT_FALSE(best.empty());
  ASSERT_GE(front.size(), 2u);
  EXPECT_EQ(front[0][3], best[0][3]);
  for (std::size_t i = 1; i < front.size(); ++i) {
    EXPECT_GE(std::stod(front[i][5]), std::stod(front[i - 1][5]));    // iteration (s)
    EXPECT_LE(std::stod(front[i][10]), std::stod(front[i - 1][10]));  // peak memory (GiB), 2 decimals
  }
  // The validation's row: predicted, measured and error as the store has them.
  const auto validation = table_cells(html, "validation-table");
  ASSERT_EQ(validation.size(), 1u);
  for (const auto& row : rows)
    if (row["fidelity"] == "validate") {
      char error[32];
      std::snprintf(error, sizeof error, "%+.1f", row["error_pct"].get<double>());
      EXPECT_EQ(validation[0][6], error);
    }
  const auto real = table_cells(html, "real-table");
  ASSERT_EQ(real.size(), 1u);
  EXPECT_GT(std::stod(real[0][5]), 50.0);  // final test accuracy (%)
  // The same store gives the same page, byte for byte.
  ASSERT_EQ(run("report --db s.db -o again.html").rc, 0);
  EXPECT_EQ(slurp("again.html"), html);

  std::string dom, console;
  if (!chromium("r.html", "", dom, console)) GTEST_SKIP() << "no chromium (apt-get install chromium)";
  EXPECT_EQ(console, "") << "console messages";
  EXPECT_NE(dom.find("data-ready=\"yes\""), std::string::npos) << "the page's script did not run to its end";
  EXPECT_NE(dom.find("id=\"g0-best\""), std::string::npos);
  EXPECT_EQ(count(dom, "<tr id=\"row-"), rows.size());
  // Opened at a spec, the page unfolds it.
  const std::string hash = *specs.begin();
  ASSERT_TRUE(chromium("r.html", "#spec-" + hash, dom, console));
  EXPECT_EQ(console, "");
  EXPECT_NE(dom.find("<details id=\"spec-" + hash + "\" open=\"\">"), std::string::npos);
}

TEST_F(HtmlReport, BadStoresAndFiltersAreOneLine) {
  expect_one_line_error(run("report --db none.db -o r.html"), "none.db: no such results store",
                        path("r.html"));
  ASSERT_EQ(run("explore --platform " + std::string(STRATA_SOURCE_DIR) +
                "/platforms/a100-node-8.xml --model gpt2-small --set layers=2 --top 0 --db s.db")
                .rc,
            0);
  expect_one_line_error(run("report --db s.db -o r.html --where \"model = 'nothing'\""),
                        "no row matches --where", path("r.html"));
  expect_one_line_error(run("report --db s.db -o r.html --where \"no_such_column = 1\""), "no such column",
                        path("r.html"));
  expect_one_line_error(run("report --db s.db -o nowhere/r.html"), "folder 'nowhere' does not exist");
  const Outcome ok = run("report --db s.db -o r.html --where \"fidelity = 'analytical'\"");
  ASSERT_EQ(ok.rc, 0) << ok.err;
  EXPECT_NE(slurp("r.html").find("where <code>fidelity = &#39;analytical&#39;</code>"), std::string::npos);
}

// A file path stored with a row is data: its link is a relative URL from the report's folder or a
// file: URL, percent-encoded, never a javascript: (or any other) scheme.
TEST_F(HtmlReport, AStoredFilePathNeverBecomesAScriptLink) {
  const std::string platform = std::string(STRATA_SOURCE_DIR) + "/platforms/test-flat-4.xml";
  const Outcome made =
      run("simulate --platform " + platform + " --model mlp --db x.db --perfetto 'javascript:alert(3)'");
  ASSERT_EQ(made.rc, 0) << made.err;
  const Outcome ok = run("report --db x.db -o rep.html");
  ASSERT_EQ(ok.rc, 0) << ok.err;
  const std::string html = slurp("rep.html");
  EXPECT_EQ(html.find("href=\"javascript:"), std::string::npos);
  EXPECT_NE(html.find("href=\"javascript%3Aalert%283%29\""), std::string::npos);
}

}  // namespace
