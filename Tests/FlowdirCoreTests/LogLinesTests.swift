import FlowdirCore
import FlowdirTestSupport
import Testing

/// A job's log read back as a person sees it on one line each.
@Suite(.tags(.small)) struct LogLinesTests {
    func last(_ count: Int, _ text: String, width: Int = 160) -> [String] {
        LogLines.last(count, of: Array(text.utf8), width: width)
    }

    @Test func theLastLinesWorthShowingInOrder() {
        #expect(last(3, "one\ntwo\n\nthree\nfour\n") == ["two", "three", "four"])
        #expect(last(1, "one\ntwo") == ["two"])
        #expect(last(2, "only\n") == ["only"])
        #expect(last(3, "") == [])
        #expect(last(3, "\n\n  \n") == [])
        #expect(last(0, "a\nb\n") == [])
    }

    /// flowdir reads `progress:` lines itself; they say nothing of what went wrong.
    @Test func progressLinesAreLeftOut() {
        #expect(last(2, "starting\nprogress: 0.5\nhalf way\nprogress: 1.0\n") == ["starting", "half way"])
    }

    /// CRLF ends a line (in Swift's Strings "\r\n" is one Character, and a
    /// split at "\n" missed it); a carriage return alone is a space.
    @Test func crlfAndBareCarriageReturnsEndNoLineInTheMiddle() {
        #expect(last(2, "first\r\nsecond\r\n") == ["first", "second"])
        #expect(last(1, "10%\r50%\r100%\n") == ["10% 50% 100%"])
    }

    @Test func colourAndOtherEscapeSequencesAreDropped() {
        #expect(last(1, "\u{1B}[1;31merror:\u{1B}[0m disk full\n") == ["error: disk full"])
        #expect(last(1, "\u{1B}]0;a title\u{07}done\n") == ["done"])
        #expect(last(1, "\u{1B}]8;;http://x\u{1B}\\link\u{1B}]8;;\u{1B}\\ text\n") == ["link text"])
        #expect(last(1, "bell\u{07} and\u{7F} delete\tkept\n") == ["bell  and  delete\tkept"])
        #expect(last(1, "ends in an escape \u{1B}") == ["ends in an escape"])
    }

    @Test func aLongLineIsCutAtTheWidth() {
        #expect(last(1, String(repeating: "x", count: 10) + "\n", width: 10) == [String(repeating: "x", count: 10)])
        #expect(last(1, String(repeating: "x", count: 11) + "\n", width: 10) == [String(repeating: "x", count: 9) + "…"])
        // By character, not byte: a multi-byte character is never split.
        #expect(last(1, String(repeating: "é", count: 12), width: 10) == [String(repeating: "é", count: 9) + "…"])
    }
}
