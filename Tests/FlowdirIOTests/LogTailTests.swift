import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Testing

/// The end of a job's log, read from the file's end (`show`'s log tail, a
/// failure's reason when the runner kept no copy).
@Suite(.tags(.medium)) struct LogTailTests {
    @Test func aLogsTailIsReadFromItsEnd() throws {
        let dir = try TemporaryDirectory()
        // 6,000 bytes of lines, then the last three: only the end is read, and a cut first line is dropped.
        var text = String(repeating: "0123456789abcdef0123456789abcdef\n", count: 180)
        text += "progress: 0.9\nnext to last\n\n" + String(repeating: "x", count: 200) + "\nlast\tone\r\n"
        try dir.write("log.txt", text)
        #expect(LogLines.last(3, ofFile: dir.path + "/log.txt")
            == ["next to last", String(repeating: "x", count: 159) + "…", "last\tone"])
        // A cut first line is dropped: with 4,096 bytes read of 6,000, only whole lines from the end.
        #expect(LogLines.last(200, ofFile: dir.path + "/log.txt")?.first == "0123456789abcdef0123456789abcdef")
        #expect(LogLines.last(3, ofFile: dir.path + "/none.txt") == nil)
        try dir.write("empty.txt", "")
        #expect(LogLines.last(3, ofFile: dir.path + "/empty.txt") == [])
    }

    /// A last line longer than what is read is no cut first line with whole
    /// lines after it: what was read of it is shown, cut at the width.
    @Test func aLastLineLongerThanWhatIsReadIsStillShown() throws {
        let dir = try TemporaryDirectory()
        try dir.write("log.txt", String(repeating: "a", count: 5000) + "the end\n")
        #expect(LogLines.last(1, ofFile: dir.path + "/log.txt") == [String(repeating: "a", count: 159) + "…"])
    }
}
