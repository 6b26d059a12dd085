import FlowdirCore
import FlowdirTestSupport
import Testing

@Suite(.tags(.small)) struct CommandTemplateTests {
    @Test func placeholdersAreReplacedInsideOneArgument() throws {
        let t = try CommandTemplate(parsing: ["magick", "{inputs.image}", "-define", "jpeg:extent={params.targetMB}MB", "{outputs.file}", "{run.dir}/x", "{tool.dir}/s.py"])
        let argv = t.expand(inputs: ["image": "/in/a b.png"], outputs: ["file": "/w/file.jpg"],
                            params: ["targetMB": "2"], runDir: "/w", toolDir: "/tools")
        #expect(argv == ["magick", "/in/a b.png", "-define", "jpeg:extent=2MB", "/w/file.jpg", "/w/x", "/tools/s.py"])
    }

    @Test(arguments: ["$(touch /tmp/x)", "; rm -rf ~", "`id`", "a b c", "--flag", "{inputs.image}", "\"quoted\" 'q'"])
    func hostileParamValuesStayOneLiteralArgument(_ value: String) throws {
        let t = try CommandTemplate(parsing: ["echo", "{params.v}", "x={params.v}"])
        let argv = t.expand(inputs: [:], outputs: [:], params: ["v": value], runDir: "/w", toolDir: "/t")
        #expect(argv == ["echo", value, "x=" + value])
    }

    @Test func absentOptionalInputExpandsToEmpty() throws {
        let t = try CommandTemplate(parsing: ["cat", "{inputs.maybe}"])
        #expect(t.expand(inputs: [:], outputs: [:], params: [:], runDir: "", toolDir: "") == ["cat", ""])
    }

    @Test func bracesEscapeAndErrors() throws {
        let t = try CommandTemplate(parsing: ["printf", "{{}} {{x}}"])
        #expect(t.expand(inputs: [:], outputs: [:], params: [:], runDir: "", toolDir: "") == ["printf", "{} {x}"])
        #expect(throws: CommandTemplate.ParseError.self) { try CommandTemplate(parsing: ["x", "{params.k"]) }
        #expect(throws: CommandTemplate.ParseError.self) { try CommandTemplate(parsing: ["x", "{env.HOME}"]) }
        #expect(throws: CommandTemplate.ParseError.self) { try CommandTemplate(parsing: []) }
    }
}
