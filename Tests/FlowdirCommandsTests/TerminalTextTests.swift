@testable import FlowdirCommands
import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// Text from files (a title given with --title or pulled from another
/// machine, a reason, a log line) is shown on a terminal, never obeyed: an
/// escape sequence cannot retitle the window or clear the screen, and a
/// line break cannot break the `ls` table. `--json` keeps it exact.
@Suite(.tags(.medium)) struct TerminalTextTests {
    @Test func controlsAreShownNotObeyed() {
        #expect(TerminalText.visible("a\u{1B}]0;pwned\u{07}b") == "a^[]0;pwned^Gb")
        #expect(TerminalText.visible("x\u{1B}[2Jy\r\u{7F}") == "x^[[2Jy^M^?")
        #expect(TerminalText.visible("c1\u{9B}31m") == "c1<U+009B>31m")
        // In a whole line, line breaks and tabs stay; flowdir's own colours only where colour is shown.
        #expect(TerminalText.visible("\u{1B}[1;31merror:\u{1B}[0m\tnext\nline", colour: true) == "\u{1B}[1;31merror:\u{1B}[0m\tnext\nline")
        #expect(TerminalText.visible("\u{1B}[1;31merror:\u{1B}[0m") == "^[[1;31merror:^[[0m")
        // Not every colour code: hidden, blinking, reversed, 256 colours are shown as text.
        for code in ["8", "5", "7", "38;5;196", "1;8", "", "31;"] {
            #expect(TerminalText.visible("\u{1B}[\(code)mx", colour: true) == "^[[\(code)mx")
        }
        // One piece of text from a file: one line, no colour code of any kind obeyed.
        #expect(TerminalText.oneLine("two\nlines\tand a tab") == "two^Jlines^Iand a tab")
        #expect(TerminalText.oneLine("\u{1B}[31mred\u{1B}[0m") == "^[[31mred^[[0m")
        #expect(TerminalText.oneLine("photo\u{202E}gnp.exe\u{2028}") == "photo<U+202E>gnp.exe<U+2028>")
        #expect(TerminalText.visible("plain é ✓") == "plain é ✓")
        #expect(TerminalText.jsonEscaped("[\n  \"a\u{9B}b\u{202E}c\u{7F}\"\n]") == "[\n  \"a\\u009bb\\u202ec\\u007f\"\n]")
    }

    @Test func aTitleWithEscapesAndBreaksIsSafeInLsAndShow() throws {
        let (dir, env) = try CommandFixture.onePicker()
        let title = "Evil\u{1B}]0;pwned\u{07} title\nsecond\u{1B}[2J"
        #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "inst", "--title", title], in: dir.path, environment: env).status == 0)
        for args in [["ls", "."], ["show", "inst"], ["inbox", "."], ["status"]] {
            let r = try CommandRunner.flowdir(args, in: dir.path, environment: env)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            #expect(!r.stdout.contains("\u{1B}") && !r.stdout.contains("\u{07}"), "\(args): \(r.stdout)")
        }
        let ls = try CommandRunner.flowdir(["ls", "."], in: dir.path, environment: env).stdout.split(separator: "\n")
        #expect(ls.count == 2, "one header, one row: \(ls)")
        #expect(ls.last?.hasPrefix("Evil^[]0;pwned^G title^Jsecond^[[2J") == true)
        let json = try CommandRunner.flowdir(["ls", ".", "--json"], in: dir.path, environment: env).stdout
        #expect(json.contains("Evil\\u001b]0;pwned\\u0007 title\\nsecond\\u001b[2J"), "\(json)")
    }
}
