#include <stdio.h>

int mod081(int x)
{
    return x + 81;
}
