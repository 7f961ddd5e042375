"""Python tools of the demo."""

from __future__ import annotations

import asyncio
import datetime as dt
import enum
from decimal import Decimal

from toolregistry import Tool, ToolMetadata, ToolTag

__all__ = ["convert_currency", "get_weather", "read_log", "world_clock"]


class Currency(enum.Enum):
    EUR = "EUR"
    USD = "USD"
    JPY = "JPY"


_RATES = {Currency.EUR: Decimal("1"), Currency.USD: Decimal("1.08"), Currency.JPY: Decimal("162.5")}


def get_weather(city: str, unit: str = "c") -> str:
    """Get the current weather for a city.

    Args:
        city: City name, e.g. "Tokyo".
        unit: Temperature unit, "c" or "f".

    Best Practices:
        - Use full city names, not abbreviations.
    """
    temperature = 22 if unit == "c" else 72
    return f"Sunny, {temperature}°{unit.upper()} in {city}"


def convert_currency(amount: Decimal, source: Currency, target: Currency) -> dict[str, object]:
    """Convert an amount between currencies at the demo's fixed rates.

    Args:
        amount: The amount in the source currency.
        source: Currency of the amount.
        target: Currency to convert to.
    """
    value = amount / _RATES[source] * _RATES[target]
    return {"amount": value.quantize(Decimal("0.01")), "currency": target,
            "as_of": dt.date(2026, 11, 29)}


async def world_clock(timezone_offset_hours: int = 0) -> str:
    """Tell the (demo's fixed) time at a UTC offset."""
    await asyncio.sleep(0)
    base = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
    return (base + dt.timedelta(hours=timezone_offset_hours)).strftime("%H:%M")


def _read_log(lines: int = 500) -> str:
    """Read the service log (long output: spooled to a file when toolregistry-spool is installed)."""
    return "\n".join(f"2026-11-29T12:{i // 60:02d}:{i % 60:02d} INFO request {i} served"
                     for i in range(lines))


read_log = Tool.from_function(
    _read_log, name="read_log",
    metadata=ToolMetadata(too_long_to_file=True, tags={ToolTag.FILE_SYSTEM, ToolTag.READ_ONLY}),
)


class Calculator:
    """Arithmetic."""

    @staticmethod
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    @staticmethod
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b
