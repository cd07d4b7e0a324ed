// boundary_test.cpp: every src/core function that src/pg calls directly is
// listed in src/pg/core_calls.hpp, where it is static_assert'ed noexcept
// (docs/cpp-boundary.md, rule 2). The compiler checks the listed ones; this
// test makes sure a new direct call cannot skip the list. It reads the sources
// (run from the top of the tree, as `make unit` does).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

// The top of the tree: this file is test/unit/boundary_test.cpp.
fs::path
TreeTop()
{
	return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

std::string
ReadFile(const fs::path &path)
{
	std::ifstream in(path);
	std::stringstream text;
	text << in.rdbuf();
	return text.str();
}

TEST(Boundary, EveryDirectCoreCallIsCheckedNoexcept)
{
	fs::path pg = TreeTop() / "src" / "pg";
	ASSERT_TRUE(fs::is_directory(pg)) << "run from the top of the tree: " << pg;
	std::string checks = ReadFile(pg / "core_calls.hpp");
	ASSERT_FALSE(checks.empty());
	// core::Name( and core::Type::Name( : a call (types are built with braces).
	std::regex call(R"(core::((?:[A-Z][A-Za-z0-9]*::)?[A-Z][A-Za-z0-9]*)\s*\()");
	std::set<std::string> calls;
	for (const fs::directory_entry &entry : fs::directory_iterator(pg)) {
		std::string name = entry.path().filename().string();
		std::string ext = entry.path().extension().string();
		// The bridge is where throwing core code may be called.
		if ((ext != ".cpp" && ext != ".hpp") || name == "claim_bridge.cpp" || name == "core_calls.hpp")
			continue;
		std::string text = ReadFile(entry.path());
		for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it) {
			std::string function = (*it)[1].str();
			calls.insert(function);
			EXPECT_NE(checks.find(function + "("), std::string::npos)
			    << name << " calls core::" << function << " directly: list it in src/pg/core_calls.hpp";
		}
	}
	EXPECT_FALSE(calls.empty());
}

}  // namespace
