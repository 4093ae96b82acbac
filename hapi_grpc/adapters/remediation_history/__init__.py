"""The `remediation_history` toolset's opener over the service's own history."""
