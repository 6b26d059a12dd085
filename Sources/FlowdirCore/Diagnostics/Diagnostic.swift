/// A place in a source file. Lines and columns start at 1; columns count
/// Unicode scalars, as libyaml does, so a caret lines up under any text.
public struct SourceLocation: Hashable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }
}

/// The stable codes of docs/templates-and-tools.md ("Validation"), plus the few
/// that are not about a template's content (an unreadable file) or that are
/// only warnings.
public enum DiagnosticCode: String, Sendable, CaseIterable, Codable {
    case cycleDetected
    case portTypeMismatch
    case unknownNode
    case unknownPort
    case duplicateNodeId
    case multiProducerOnRequiredPort
    case multiProducerOnOptionalPort
    case unboundRequiredPort
    case invalidParam
    case invalidAwait
    case invalidResourceClass
    case unsupportedSchema
    case malformedFile
    // Not about the content: the file could not be read at all.
    case unreadableFile
    // Warnings.
    case unknownKey
    case toolNotInstalled
}

public enum Severity: String, Sendable, Codable, Comparable {
    case warning
    case error

    public static func < (lhs: Severity, rhs: Severity) -> Bool {
        lhs == .warning && rhs == .error
    }
}

/// One problem found in a template, a tool file or an instance. Rendered to
/// text in exactly one place (`DiagnosticRenderer`).
public struct Diagnostic: Hashable, Sendable {
    public var severity: Severity
    public var code: DiagnosticCode
    public var message: String
    /// Where the problem is; `nil` when it is about a whole file that has no
    /// useful position (then `file` says which).
    public var location: SourceLocation?
    public var file: String?
    /// What to do about it, when something useful can be said.
    public var hint: String?

    public init(
        _ severity: Severity, _ code: DiagnosticCode, _ message: String,
        at location: SourceLocation? = nil, file: String? = nil, hint: String? = nil
    ) {
        self.severity = severity
        self.code = code
        self.message = message
        self.location = location
        self.file = file ?? location?.file
        self.hint = hint
    }

    public static func error(
        _ code: DiagnosticCode, _ message: String, at location: SourceLocation? = nil,
        file: String? = nil, hint: String? = nil
    ) -> Diagnostic {
        Diagnostic(.error, code, message, at: location, file: file, hint: hint)
    }

    public static func warning(
        _ code: DiagnosticCode, _ message: String, at location: SourceLocation? = nil,
        file: String? = nil, hint: String? = nil
    ) -> Diagnostic {
        Diagnostic(.warning, code, message, at: location, file: file, hint: hint)
    }
}

extension Array where Element == Diagnostic {
    public var errors: [Diagnostic] { filter { $0.severity == .error } }
    public var warnings: [Diagnostic] { filter { $0.severity == .warning } }
    public var hasErrors: Bool { contains { $0.severity == .error } }

    /// File order, then position, so output is stable whatever order the
    /// checks ran in.
    public func sortedByLocation() -> [Diagnostic] {
        enumerated().sorted { a, b in
            let (l, r) = (a.element, b.element)
            let lf = l.file ?? "", rf = r.file ?? ""
            if lf != rf { return lf < rf }
            let ll = l.location.map { ($0.line, $0.column) } ?? (0, 0)
            let rl = r.location.map { ($0.line, $0.column) } ?? (0, 0)
            if ll != rl { return ll < rl }
            return a.offset < b.offset
        }.map(\.element)
    }
}

/// A diagnostic can also travel as a thrown error when one problem ends the work.
extension Diagnostic: Error {}
