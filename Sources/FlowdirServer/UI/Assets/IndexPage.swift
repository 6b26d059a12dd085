extension UIAssets {
    static let indexHTML = ##"""
"""##
}
