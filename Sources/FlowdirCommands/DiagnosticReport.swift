import FlowdirCore
import FlowdirTemplates

/// The JSON form of a template's check, shared by `check` and `templates`.
struct DiagnosticJSON: Encodable {
    var severity: String
    var code: String
    var message: String
    var file: String?
    var line: Int?
    var column: Int?
    var hint: String?

    init(_ d: Diagnostic) {
        severity = d.severity.rawValue
        code = d.code.rawValue
        message = d.message
        file = d.file
        line = d.location?.line
        column = d.location?.column
        hint = d.hint
    }
}

extension LoadedTemplate {
    /// `2 errors, 1 warning`, or `valid`.
    var summary: String {
        let e = diagnostics.errors.count, w = diagnostics.warnings.count
        var parts: [String] = []
        if e > 0 { parts.append(e == 1 ? "1 error" : "\(e) errors") }
        if w > 0 { parts.append(w == 1 ? "1 warning" : "\(w) warnings") }
        if e == 0 { parts.insert("valid", at: 0) }
        return parts.joined(separator: ", ")
    }
}
