// UTF-8 well-formedness: every kind of ill-formed sequence found at its offset with its reason,
// and refused text shown without the bytes that would do damage.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "schema/utf8.hpp"

using namespace troupe;

TEST_SUITE("schema.utf8") {
  TEST_CASE("well-formed text of every sequence length passes") {
    for (const std::string& text : std::vector<std::string>{"", "plain ascii", "été", "€ 5", "\xf0\x9f\x8e\x89 party", "\xef\xbf\xbf",
                                   "\xf4\x8f\xbf\xbf", std::string("nul \0 inside", 12)}) {
      CAPTURE(text);
      CHECK_FALSE(utf8_problem(text));
    }
  }

  TEST_CASE("each ill-formed sequence is found at its first byte, saying why") {
    struct Bad {
      std::string text;
      size_t offset;
      std::string says;
    };
    const std::vector<Bad> cases = {
        {"ab\xff", 2, "byte 0xff cannot occur in UTF-8"},
        {"\x80", 0, "byte 0x80 continues a character that never began"},
        {"x\xc0\xaf", 1, "byte 0xc0 begins an overlong encoding"},
        {"\xe0\x80\xaf", 0, "bytes 0xe0 0x80 begin an overlong encoding"},
        {"\xf0\x8f\xbf\xbf", 0, "bytes 0xf0 0x8f begin an overlong encoding"},
        {"\xed\xa0\x80", 0, "bytes 0xed 0xa0 encode a UTF-16 surrogate"},
        {"\xf4\x90\x80\x80", 0, "bytes 0xf4 0x90 encode a code point past U+10FFFF"},
        {"\xf5\x80\x80\x80", 0, "byte 0xf5 cannot occur in UTF-8"},
        {"ok \xe2\x82", 3, "cut short by the end of the text"},
        {"\xe2\x82x", 0, "the character that begins with byte 0xe2 is cut short by byte 0x78"},
        {"\xc3(", 0, "cut short by byte 0x28"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.text);
      auto problem = utf8_problem(c.text);
      REQUIRE(problem);
      CHECK(problem->offset == c.offset);
      CHECK_MESSAGE(problem->message.find(c.says) != std::string::npos, problem->message);
    }
  }

  TEST_CASE("printable escapes control characters, backslashes and bytes that are not UTF-8") {
    CHECK(printable("été") == "été");
    CHECK(printable("a\x1b[31mb") == "a\\x1b[31mb");
    CHECK(printable("\xff\xfe") == "\\xff\\xfe");
    CHECK(printable("a\\b\n") == "a\\x5cb\\x0a");
  }
}
