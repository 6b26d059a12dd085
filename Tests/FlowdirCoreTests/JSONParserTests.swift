import FlowdirCore
import FlowdirTestSupport
import Testing

@Suite(.tags(.small)) struct JSONParserTests {
    func parse(_ s: String, comments: Bool = false) throws -> MarkedValue {
        try JSONParser.parse(Array(s.utf8), file: "f.json", allowComments: comments)
    }

    func failure(_ s: String, comments: Bool = false) -> JSONParser.SyntaxError? {
        do { _ = try JSONParser.parse(Array(s.utf8), file: "f.json", allowComments: comments); return nil } catch { return error }
    }

    @Test func valuesCarryTheirPositions() throws {
        let v = try parse("{\n  \"a\": [1, 2.5, true, null],\n  \"é\": \"x\\u00e9\\ud83d\\ude00\"\n}")
        let entries = try #require(v.entries)
        #expect(entries.map(\.key) == ["a", "é"])
        #expect(entries[0].keyLocation == SourceLocation(file: "f.json", line: 2, column: 3))
        let items = try #require(entries[0].value.items)
        #expect(items[1].location.column == 12)
        #expect(items[1].paramValue == .double(2.5))
        #expect(items[0].paramValue == .int(1))
        #expect(entries[1].value.string == "xé😀")
        // Columns count scalars, not bytes: "é" is two bytes but one column.
        #expect(entries[1].value.location == SourceLocation(file: "f.json", line: 3, column: 8))
    }

    @Test func jsoncAllowsCommentsAndTrailingCommas() throws {
        let v = try parse("{ // a comment\n \"a\": 1, /* block */ \"b\": [1, 2,], }", comments: true)
        #expect(v.entries?.map(\.key) == ["a", "b"])
        #expect(failure("{\"a\": 1 // no\n}")?.message == "expected ',' or '}', found a comment (comments are not allowed in .json; name the file .jsonc to use them)")
        #expect(failure("[1, 2,]")?.message == "expected a value, found ']'")
    }

    @Test func errorsSayWhereAndWhat() {
        #expect(failure("") == .init(message: "the document is empty", line: 1, column: 1))
        #expect(failure("{\"a\": 1,\n \"a\": 2}") == .init(message: "duplicate key 'a' (first at line 1, column 2)", line: 2, column: 2))
        #expect(failure("{\"a\" 1}") == .init(message: "expected ':' after key 'a', found '1'", line: 1, column: 6))
        #expect(failure("[1, 2") == .init(message: "expected ',' or ']', found end of file (the list at line 1 is not closed)", line: 1, column: 6))
        #expect(failure("\"abc") == .init(message: "unterminated string", line: 1, column: 5))
        #expect(failure("01") == .init(message: "numbers cannot have leading zeros", line: 1, column: 1))
        #expect(failure("{} x") == .init(message: "unexpected 'x' after the document's end", line: 1, column: 4))
        #expect(failure(String(repeating: "[", count: 200))?.message == "nesting is deeper than 128 levels")
    }
}
