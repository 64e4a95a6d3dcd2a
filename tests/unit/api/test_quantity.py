"""agent.api.quantity: quantities parsed and written back exactly as the API server stores a
container's resources (each row was checked against a real kube-apiserver v1.36 with a
server-side dry run of a Deployment)."""

from fractions import Fraction

import pytest

from agent.api import quantity

STORED = [
    ("0.5", "500m"), ("1", "1"), ("1000m", "1"), ("100m", "100m"), ("1.5", "1500m"), ("2", "2"), (2, "2"),
    ("1500", "1500"), ("1k", "1k"), ("1e3", "1e3"), ("1E3", "1E3"), ("128974848", "128974848"),
    ("129e6", "129e6"), ("129M", "129M"), ("123Mi", "123Mi"), ("1024Mi", "1Gi"), ("1.5Gi", "1536Mi"),
    ("0.5Gi", "512Mi"), ("500Ki", "500Ki"), ("0.5Ki", "512"), ("2048Ki", "2Mi"), ("1Ki", "1Ki"), ("1023", "1023"),
    ("0", "0"), ("0.0001", "1m"), ("1e-12", "1e-3"), ("0.1234567891", "124m"), ("1.", "1."), ("+5", "+5"),
    (".5", "500m"), ("1e-3", "1e-3"), ("12e-2", "120e-3"), ("1000000k", "1G"), ("1000Ki", "1000Ki"), ("7E", "7E"),
    ("1Ei", "1Ei"), ("3.3333333333", "3334m"), ("0.5m", "1m"), ("1000000000m", "1M"), ("5e+2", "500"),
    ("250M", "250M"), ("0.25", "250m"), ("-0", "0"), ("0.0", "0"), ("0100", "0100"), ("1.50", "1500m"),
    ("5Ti", "5Ti"), ("5Pi", "5Pi"), ("7Ei", "7Ei"), ("8Ki", "8Ki"), ("9Ki", "9Ki"), ("1000000000000000000", "1E"),
    ("00", "0"), ("000.5", "500m"), ("0.50", "500m"), ("10.0", "10"), ("100.5m", "101m"), ("0001Ki", "0001Ki"),
    ("+100Ti", "100Ti"), ("+15Ti", "+15Ti"), ("+1Pi", "1Pi"), ("+9Gi", "+9Gi"), ("+12345Gi", "+12345Gi"),
    ("+123456Gi", "123456Gi"), ("+8Ki", "8Ki"), ("+1.5Ki", "1536"), ("+1234567890123456789", "1234567890123456789"),
    ("+123456789012345678", "+123456789012345678"), ("+1m", "+1m"), ("+1u", "1m"), ("+1000", "1k"), ("+1k", "+1k"),
    ("+12.5k", "12500"), ("+1.500", "+1.500"), ("+0.1", "100m"), ("0.0001Ki", "103m"), ("+1e3", "+1e3"),
    ("+1e-3", "+1e-3"), ("+1e-6", "1e-3"), ("+3Ki", "+3Ki"), ("+1Ei", "1Ei"), ("+15Pi", "15Pi"),
    ("0.0000000000000000000000000000001e40", "1e9"), ("1e-11", "1e-3"), ("0.5e-9", "1e-3"),
    ("1.0Ki", "1Ki"), ("0.9990234375Ki", "1023"), ("1.5Ki", "1536"), ("1.0Mi", "1Mi"), ("2.0Gi", "2Gi"),
    ("1.5k", "1500"), ("2.5M", "2500k"), ("1e18", "1e18"), ("1e10", "10e9"), ("10e9", "10e9"), ("1e-2", "10e-3"),
    ("100e-3", "100e-3"), ("3m", "3m"), ("1500m", "1500m"), ("2k", "2k"), ("2000", "2k"), ("1.000", "1"),
    ("0.001", "1m"), ("1e2", "100"), ("16Gi", "16Gi"), ("64Mi", "64Mi"),
]


@pytest.mark.parametrize("text, stored", STORED)
def test_stored_as_the_api_server_stores_it(text, stored):
    assert quantity.stored(text) == stored


@pytest.mark.parametrize("text, value, form", [
    ("500m", Fraction(1, 2), "DecimalSI"), ("1Gi", 2 ** 30, "BinarySI"), ("1e3", 1000, "DecimalExponent"),
    ("0.5Ki", 512, "BinarySI"), ("0.5Mi", 524288, "BinarySI"), ("1n", Fraction(1, 10 ** 9), "DecimalSI"),
    ("1e-12", Fraction(1, 10 ** 9), "DecimalExponent"), (3, 3, "DecimalSI"), ("-2", -2, "DecimalSI"),
    ("0.1e1", 1, "DecimalExponent"), ("1u", Fraction(1, 10 ** 6), "DecimalSI"),
])
def test_parse(text, value, form):
    assert quantity.parse(text) == (value, form)


def test_a_binary_quantity_below_one_is_decimal():
    assert quantity.parse("0.0001Ki") == (Fraction(1024, 10000), "BinarySI")
    assert quantity.parse("0.001Ki") == (Fraction(1024, 1000), "BinarySI")


@pytest.mark.parametrize("text, message", [
    ("1x", "must be a quantity such as"), ("", "must be a quantity such as"), ("1 Gi", "must be a quantity"),
    ("Gi", "must be a quantity"), (1.5, "must be a quantity"), (True, "must be a quantity"), (None, "must be a quantity"),
    ("1e1.5", "the exponent 'e1.5' must be a whole number"), ("1e9999999999", "must be a whole number (a 32-bit"),
    ("1e2147483648", "the exponent 'e2147483648' must be a whole number (a 32-bit integer)"),
    ("1e-2147483649", "the exponent 'e-2147483649' must be a whole number (a 32-bit integer)"),
    ("1e2147483647", f"must be at most {quantity.MAX}"), ("0.1e20", f"must be at most {quantity.MAX}"),
    ("9.3e18", f"must be at most {quantity.MAX}"),
    ("1e41", f"must be at most {quantity.MAX}"), ("9223372036854775808", f"must be at most {quantity.MAX}"),
    ("8Ei", f"must be at most {quantity.MAX}"), ("1ki", "must be a quantity"), ("1KI", "must be a quantity"),
])
def test_not_a_quantity(text, message):
    with pytest.raises(quantity.Invalid) as err:
        quantity.parse(text)
    assert message in str(err.value)


def test_exponents_at_the_edges():
    assert quantity.parse("1e-2147483648") == (Fraction(1, 10 ** 9), "DecimalExponent")
    assert quantity.parse("-1e-2147483648") == (Fraction(-1, 10 ** 9), "DecimalExponent")
    assert quantity.parse("0e2147483647") == (0, "DecimalExponent")
    assert quantity.parse("0.01e20") == (10 ** 18, "DecimalExponent")
    assert quantity.parse("9.2e18") == (92 * 10 ** 17, "DecimalExponent")
    assert quantity.parse("12e-11") == (Fraction(1, 10 ** 9), "DecimalExponent")
    assert quantity.parse("1.5e-9") == (Fraction(2, 10 ** 9), "DecimalExponent")


def test_the_exact_words():
    with pytest.raises(quantity.Invalid) as err:
        quantity.parse(None)
    assert str(err.value) == "must be a quantity such as 500m, 1.5, 128Mi or 1Gi"
    with pytest.raises(quantity.Invalid) as err:
        quantity.parse("x")
    assert str(err.value) == ("must be a quantity such as 500m, 1.5, 128Mi or 1Gi: a number, then one of the "
                              "suffixes n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent e3")


def test_the_largest_and_tiny_quantities():
    assert quantity.parse("9223372036854775807")[0] == quantity.MAX
    assert quantity.stored("0e99999") == "0"
    assert quantity.parse("1e-40")[0] == Fraction(1, 10 ** 9)
    assert quantity.stored("7Ei") == "7Ei" and quantity.stored("4Ei") == "4Ei"


def test_negative_quantities_keep_their_sign():
    """Refused for resources (specrules), but parsed and written as the API server would."""
    assert (quantity.stored("-1"), quantity.stored("-1.5"), quantity.stored("-1024Mi")) == ("-1", "-1500m", "-1Gi")
    assert quantity.parse("-0.5m")[0] == Fraction(-1, 2000)
    assert (quantity.stored("-0.0001"), quantity.stored("-1e-12"), quantity.stored("-1.0Ki")) == ("-1m", "-1e-3", "-1Ki")
    assert quantity.parse("-1e-12") == (Fraction(-1, 10 ** 9), "DecimalExponent")
    assert quantity.parse("-1e-30") == (Fraction(-1, 10 ** 9), "DecimalExponent")
    assert quantity.stored("-0.0015") == "-2m"
