"""A JUnit XML file as junitparser (PyPI) reads it: one line per test case,
`<classname>\t<name>\t<result>` (pass, failure or skipped, with the message), then
`tests failures skipped` of the suite. PYTHONPATH must hold junitparser (./test installs it
into STAMPEDE_PYTHON_PEERS)."""
import sys

from junitparser import Failure, JUnitXml, Skipped

xml = JUnitXml.fromfile(sys.argv[1])
suites = [xml] if xml._tag == "testsuite" else list(xml)
for suite in suites:
    for case in suite:
        result = "pass"
        for r in case.result:
            if isinstance(r, Failure):
                result = f"failure: {r.message}"
            elif isinstance(r, Skipped):
                result = f"skipped: {r.message}"
        print(f"{case.classname}\t{case.name}\t{result}")
    print(f"{suite.tests} {suite.failures} {suite.skipped}")
