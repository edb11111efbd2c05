#include <stdio.h>

int mod007(int x)
{
    return x + 7;
}
